"""pygls's JSON-RPC protocol where it leaves a client waiting (LSP 3.17, JSON-RPC 2.0): every
request gets an answer.

- A request whose params do not fit the method's type (a client bug, a fuzzer) is answered
  InvalidParams naming what is wrong, and logged in one line; pygls answered nothing (the
  client waited forever), showed the user "Error in server" and logged a traceback.
- A handler's InvalidParams (a command's arguments that its protocol model refuses) is logged
  in one line, the answer's message: it is the client's mistake, answered as such, not a
  server fault worth a traceback.
- A request after `shutdown` (a second shutdown included) is answered InvalidRequest, as the
  spec asks; pygls dropped it with a warning, so a client awaiting it hung until killed.
- `shutdown` while a command is still pending is answered null, and the pending request
  RequestCancelled; pygls answered the shutdown InternalError (`lsp_shutdown`, below).
- Every message goes out as strict JSON (`engine.json_text`, the one writer): pygls wrote NaN
  and Infinity as such, which Node's JSON.parse (vscode-jsonrpc) rejects, losing the whole
  message; they go out as null, as the CLI prints them (`_send_data`, below).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from cattrs import transform_error
from cattrs.errors import ClassValidationError
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
)
from pygls.protocol import JsonRPCRequestMessage, LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest
from pygls.protocol.language_server import lsp_method

from kernelscope.daemon.engine import NotJSON, json_text

log = logging.getLogger("kernelscope.lsp")
CLIENT_ERRORS = (JsonRpcInvalidParams, JsonRpcInvalidRequest)


def _client_error_in_one_line(record: logging.LogRecord) -> bool:
    """(a filter on pygls's protocol logger) A client's error answered as one: no traceback."""
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, CLIENT_ERRORS):
        record.msg, record.args = f"{record.getMessage()}: {type(error).__name__}: {error.message}", ()
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


logging.getLogger("pygls.protocol.json_rpc").addFilter(_client_error_in_one_line)


@dataclass(frozen=True)
class Refused:
    """A request whose params could not be read: answered, never handled."""

    id: int | str
    method: str
    problem: str


class KernelscopeProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" not in data or "id" not in data or "method" not in data or "error" in data:
            return super().structure_message(data)  # (responses, notifications, nested objects)
        request_type = self.get_message_type(data["method"]) or JsonRPCRequestMessage
        try:
            return self._converter.structure(data, request_type)
        except ClassValidationError as exc:
            return Refused(data["id"], str(data["method"]), "; ".join(transform_error(exc, path="request")))

    def handle_message(self, message: Any) -> None:
        request = isinstance(message, (Refused, RPCRequest))
        error: JsonRpcException
        if self._shutdown and request and message.method != types.EXIT:
            error = JsonRpcInvalidRequest(
                message=f"{message.method}: the server is shut down (only exit remains)"
            )
            self._send_response(message.id, None, error.to_response_error())
        elif isinstance(message, Refused):
            log.warning("refused %s (id %s): invalid params: %s", message.method, message.id, message.problem)
            error = JsonRpcInvalidParams(message=f"invalid params for {message.method}: {message.problem}")
            self._send_response(message.id, None, error.to_response_error())
        else:
            super().handle_message(message)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls 2.1.1's `lsp_shutdown`, iterating over a copy of the pending requests.

        pygls cancels every pending request while iterating `_request_futures` itself; a
        pending `workspace/executeCommand` is a plain concurrent.futures.Future there (pygls
        runs it as a generator that waits for the command's coroutine), whose cancel() runs its
        done callback at once, and that callback (`_send_handler_result`) pops the request from
        the same dict: "RuntimeError: dictionary changed size during iteration", the shutdown
        answered InternalError and `_shutdown` never set (later requests not refused).
        pygls issue #606 (open) reports the loop, blaming another thread; the callback suffices
        (tests/lsp/test_lsp_seams.py `test_shutdown_with_a_command_pending`)."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id  # (the shutdown request itself is answered, not cancelled)
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True

    def _send_data(self, data: Any) -> None:
        """pygls 2.1.1's `_send_data`, its body written by the one JSON writer (strict: a NaN or
        Infinity goes out as null, `json_text(nulls=True)`). A response that cannot be written
        at all is answered InternalError naming why, so the client is not left waiting; a
        notification or a request to the client is logged and not sent."""
        if not data or self.writer is None:
            super()._send_data(data)  # (pygls's own words for both)
            return
        try:
            body = json_text(data, nulls=True, default=self._serialize_message)
        except NotJSON as exc:
            log.error("not sent: %s %s", getattr(data, "method", None) or "an answer", exc)
            if not hasattr(data, "result") or getattr(data, "id", None) is None:
                return
            error = JsonRpcInternalError(message=f"kernelscope's answer was not sent: {exc}")
            body = json_text(
                {"jsonrpc": "2.0", "id": data.id, "error": error.to_response_error()},
                default=self._serialize_message,
            )
        try:
            if self._include_headers:
                body = (
                    f"Content-Length: {len(body)}\r\n"  # (json_text escapes non-ASCII: characters are bytes)
                    f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n{body}"
                )
            written = self.writer.write(body.encode(self.CHARSET))
            if inspect.isawaitable(written):
                asyncio.ensure_future(written)  # noqa: RUF006 (as pygls does: the transport holds the write)
        except BrokenPipeError:
            log.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:
            log.exception("Error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)
