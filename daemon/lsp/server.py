"""`kernelscope serve`: wiring only. The table `FEATURES` binds each LSP method to the feature
module that handles it (daemon/lsp/features/) and says where it runs: `LOOP` handlers run on
the event loop (they change the live state or talk to the client); `POOL` handlers read, on the
command pool, from a `Document` snapshot taken on the loop (features/__init__.py); an answer the
workspace cache already holds (the lenses after a refresh) is handed out on the loop.

The daemon process never imports torch or triton: benchmarks run in child processes.
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from lsprotocol import types

from kernelscope.daemon.lsp import notify
from kernelscope.daemon.lsp.features import Document, confirm, documents, hints, hover, lenses, lifecycle
from kernelscope.daemon.lsp.features.commands import RUNS_ON_LOOP, parse
from kernelscope.daemon.lsp.language_server import KernelscopeServer
from kernelscope.protocol.vocabulary import COMMANDS, WORKSPACES_REQUEST

log = logging.getLogger("kernelscope.lsp")
Runs = Literal["loop", "pool"]
LOOP: Runs = "loop"
POOL: Runs = "pool"


def on_pool(
    handler: Callable[[Document, Any], Any], kept: Callable[[Document], Any] | None = None
) -> Callable[..., Any]:
    """A read handler: snapshot the document on the loop, answer on the command pool. `kept`
    (loop, a lookup, no computing): an answer the cache already holds, given without the
    round trip to the pool."""

    async def run(ls: KernelscopeServer, params: Any) -> Any:
        doc = ls.document(params.text_document.uri)
        if doc is None:
            return None
        answer = kept(doc) if kept is not None else None
        return answer if answer is not None else await ls.off_loop(handler, doc, params)

    run.__doc__ = handler.__doc__
    return run


async def resolve_inlay_hint(ls: KernelscopeServer, hint: types.InlayHint) -> types.InlayHint:
    """inlayHint/resolve: the document is named by the hint's own data."""
    where = hints.HintData.parse(hint.data)
    doc = ls.document(where.uri) if where is not None else None
    if where is None or doc is None:
        return hint
    resolved: types.InlayHint = await ls.off_loop(hints.resolve, doc, hint, where)
    return resolved


FEATURES: list[tuple[str, Callable[..., Any], Runs]] = [
    (types.INITIALIZE, lifecycle.initialize, LOOP),
    (types.INITIALIZED, lifecycle.initialized, LOOP),
    (types.WORKSPACE_DID_CHANGE_CONFIGURATION, lifecycle.did_change_configuration, LOOP),
    (types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, lifecycle.did_change_folders, LOOP),
    (types.SHUTDOWN, lifecycle.shutdown, LOOP),
    (types.EXIT, lifecycle.exit_session, LOOP),
    (types.WINDOW_WORK_DONE_PROGRESS_CANCEL, lifecycle.progress_cancel, LOOP),
    (WORKSPACES_REQUEST, lifecycle.workspaces, LOOP),
    (types.TEXT_DOCUMENT_DID_OPEN, documents.did_open, LOOP),
    (types.TEXT_DOCUMENT_DID_CHANGE, documents.did_change, LOOP),
    (types.TEXT_DOCUMENT_DID_SAVE, documents.did_save, LOOP),
    (types.TEXT_DOCUMENT_DID_CLOSE, documents.did_close, LOOP),
    (types.TEXT_DOCUMENT_CODE_LENS, on_pool(lenses.code_lens, lenses.kept_lenses), POOL),
    (types.TEXT_DOCUMENT_HOVER, on_pool(hover.hover), POOL),
    (types.TEXT_DOCUMENT_INLAY_HINT, on_pool(hints.inlay_hints), POOL),
    (types.INLAY_HINT_RESOLVE, resolve_inlay_hint, POOL),
]


def _command_handler(model_name: str, method_name: str) -> Callable[..., Any]:
    """One handler per command of the vocabulary: the one parameter object is parsed with its
    protocol model on the loop (InvalidParams naming the field); a command that starts a job
    runs on the loop, any other on the command pool (features/commands.py). Sent with no
    arguments (Helix's palette), or with one object that names no workspace (Helix 25.07+:
    `:lsp-workspace-command kernelscope.compare {"versionA": "v0", "versionB": "v4"}`), a
    command that needs a workspace takes the implied one; one whose fields are all optional
    (topExperiments, cancel) takes its defaults, as `{}` would. With `"confirm": true`
    (maskHalf, restart) the person is asked before anything is written (features/confirm.py)."""

    async def handler(ls: KernelscopeServer, *args: Any) -> Any:
        from kernelscope.protocol import lsp as protocol

        model = getattr(protocol, model_name)
        workspace = model.model_fields.get("workspace")
        if workspace is not None and workspace.is_required():
            if not args:
                args = ({"workspace": ls.implied_workspace()},)
            elif len(args) == 1 and isinstance(args[0], dict) and "workspace" not in args[0]:
                args = ({**args[0], "workspace": ls.implied_workspace()},)
        elif not args and not any(field.is_required() for field in model.model_fields.values()):
            args = ({},)
        params = parse(model, args)
        if getattr(params, "confirm", False):  # a click that masks memory: the person is asked first
            params, declined = await confirm.ask_first(ls, params)
            if declined is not None:
                return declined
        method = getattr(ls.commands, method_name)
        if method_name in RUNS_ON_LOOP:
            return method(params)
        return await ls.off_loop(method, params)

    return handler


def _shown(command: str, handler: Callable[..., Any]) -> Callable[..., Any]:
    """`handler`, its answer (result or error) also shown to a client that drops it (Helix)."""

    async def shown(ls: KernelscopeServer, *args: Any) -> Any:
        if not ls.client.drops_command_answers:
            return await handler(ls, *args)
        try:
            result = await handler(ls, *args)
        except Exception as exc:
            _tell(ls, command, error=str(getattr(exc, "message", None) or exc))
            raise
        _tell(ls, command, result)
        return result

    return shown


def _tell(ls: KernelscopeServer, command: str, result: Any = None, error: str | None = None) -> None:
    """notify.command_answer, which must not turn a command that ran into an error (an answer
    file that cannot be written: the command's own result or error still goes back)."""
    try:
        notify.command_answer(ls, command, result, error)
    except Exception:  # (logged: the command ran, its answer still goes back)
        log.warning("could not show %s's answer", command, exc_info=True)


server = KernelscopeServer()
for _method, _handler, _runs in FEATURES:
    server.feature(_method)(_handler)
for _name, (_model, _method_name, _kind) in COMMANDS.items():
    server.command(_name)(_shown(_name, _command_handler(_model, _method_name)))


def token_path(port: int) -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or str(Path.home() / ".local" / "state")
    return Path(base) / "kernelscope" / f"tcp-{port}.token"


def write_token(port: int) -> tuple[str, Path]:
    """A fresh random token in a file only this user can read (0600, in a 0700 directory)."""
    token = secrets.token_urlsafe(32)
    path = token_path(port)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    fd = os.open(str(path) + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    os.replace(str(path) + ".tmp", path)
    return token, path


def serve(tcp: bool = False, port: int = 2087) -> None:
    """Run the server on stdio, or on 127.0.0.1 only with `tcp` (clients must send the token
    from the token file as initializationOptions.kernelscope.token). Logs go to stderr."""
    level = os.environ.get("KERNELSCOPE_LOG", "INFO")
    logging.basicConfig(
        stream=sys.stderr, level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    if level != "DEBUG":  # pygls logs every message it sends at INFO: kernelscope's own lines stay readable
        logging.getLogger("pygls").setLevel(logging.WARNING)
    if tcp:
        server.tcp_token, path = write_token(port)
        log.info("listening on 127.0.0.1:%d; token in %s", port, path)
        server.start_tcp("127.0.0.1", port)
    else:
        server.start_io()
    if server.exit_code is not None:  # (None: the client went away without `exit`)
        sys.exit(server.exit_code)
