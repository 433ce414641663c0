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
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cattrs import transform_error
from cattrs.errors import ClassValidationError
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.protocol import JsonRPCRequestMessage, LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest

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
