"""`kernelscope serve`: wiring only. Each LSP feature is a few lines that call a feature
module (lenses, hover, diagnostics, commands, jobs, watch), which call the engine.

The daemon process never imports torch or triton: benchmarks run in child processes.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import sys
import threading
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer

from kernelscope.daemon.lsp import configuration, history_hints, lenses
from kernelscope.daemon.lsp.commands import Commands
from kernelscope.daemon.lsp.diagnostics import probe_diagnostics
from kernelscope.daemon.lsp.jobs import Jobs
from kernelscope.daemon.lsp.state import ServerState, WorkspaceState, uri_to_path
from kernelscope.daemon.lsp.watch import Watcher
from kernelscope.protocol.vocabulary import COMMANDS, WORKSPACES_REQUEST

log = logging.getLogger("kernelscope.lsp")
VERSION = "0.1.0"


class KernelscopeServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("kernelscope", VERSION)
        self.state = ServerState()
        self.jobs = Jobs(self, self.state, self.refresh)
        self.commands = Commands(self.state, self.jobs, self.refresh)
        self.watcher = Watcher(self.on_disk_change)
        self.supports_inlay_refresh = False
        self.supports_lens_refresh = False
        # tooltips of inlay hints sent on inlayHint/resolve, when the client asks that way
        self.resolves_inlay_tooltips = False
        self.tcp_token: str | None = None  # required in initializationOptions on TCP

    # -- talking to the client (event loop only) ------------------------------------------

    def refresh(self, ws: WorkspaceState, *parts: str) -> None:
        """Drop the cached parts that changed (see WorkspaceState.invalidate), tell the client."""
        ws.invalidate(*parts)
        if self.supports_lens_refresh:
            self.workspace_code_lens_refresh(None)
        if self.supports_inlay_refresh:
            self.workspace_inlay_hint_refresh(None)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=ws.workspace.kernel_path.as_uri(),
                diagnostics=[*ws.history_diagnostics, *probe_diagnostics(ws)],
            )
        )

    def on_disk_change(self, root: Path, names: set[str]) -> None:
        """From the watcher thread: an agent or git changed files of a workspace."""

        def handle() -> None:
            if any(n in ("README.md", "kernel.py") for n in names) or root not in self.state.workspaces:
                self.state.rescan()
            ws = self.state.workspaces.get(root)
            if ws is None:
                return
            parts = {"kernels"} if "kernel.py" in names else set()
            if "README.md" in names or any(n.endswith(".json") for n in names):
                parts |= {"memory", "store"}  # iterations write memory and experiments together
            self.refresh(ws, *parts)
            if "kernel.py" in names:  # an agent rewrote it: the same check as a save
                self.jobs.spawn(self.kernel_changed(ws, None))

        self.state.on_loop(handle)

    async def off_loop(self, call: Any, *args: Any) -> Any:
        """`call(*args)` on the command pool, awaited on the loop: engine work (history, store,
        the workspace lock) never holds up lenses, hover or cancel."""
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(self.state.command_pool, call, *args)

    async def kernel_changed(self, ws: WorkspaceState, text: str | None) -> None:
        """A save (or an agent's rewrite) of kernel.py, on the loop: first the saved text against
        every recorded version (no GPU time, no workspace code); an identical one is said at once
        and not benchmarked again; anything else is re-benchmarked (debounced, when trusted).

        One save is reported twice (didSave, and the watcher seeing the file change), the
        second up to seconds later on a loaded machine: a text already handled whose check or
        probe is still under way, or whose numbers are on screen, is not handled again (a
        second probe would cancel the first and mark its fresh numbers stale)."""
        if text is None:
            text = ws.workspace.kernel_path.read_text(encoding="utf-8", errors="replace")
        digest = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()
        if digest == ws.kernel_digest and (
            ws.checking_kernel == digest or not ws.stale or self.jobs.probe_in_flight(ws)
        ):
            return
        ws.kernel_digest = ws.checking_kernel = digest
        ws.stale = True
        self.refresh(ws, "kernels")
        try:
            diagnostics, identical = await self.off_loop(history_hints.fingerprint_on_save, ws, text)
        finally:
            if ws.checking_kernel == digest:
                ws.checking_kernel = None
        if ws.kernel_digest != digest:  # a newer text arrived meanwhile: its check decides
            return
        ws.history_diagnostics = diagnostics
        if identical:  # already measured (or already failed): the numbers on screen are this code's
            self.jobs.cancel_pending_probe(ws)
            self.jobs.cancel_running_probe(ws)  # it measures code that is no longer there
            ws.probe, ws.stale = None, False
        else:
            self.jobs.schedule_probe(ws)
        self.refresh(ws, "kernels")

    def show_warning(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))


server = KernelscopeServer()


@server.feature(types.INITIALIZE)
def initialize(ls: KernelscopeServer, params: types.InitializeParams) -> None:
    if ls.tcp_token is not None:
        raw = params.initialization_options
        options: dict[str, Any] = raw if isinstance(raw, dict) else {}
        nested_raw = options.get("kernelscope")
        nested: dict[str, Any] = nested_raw if isinstance(nested_raw, dict) else {}
        offered = str(nested.get("token") or options.get("token") or "")
        if not hmac.compare_digest(offered, ls.tcp_token):
            log.warning("refused a TCP connection without the right token")
            import asyncio

            asyncio.get_event_loop().call_later(0.2, os._exit, 3)  # the refused client gets nothing more
            raise JsonRpcInvalidRequest(message="kernelscope: missing or wrong token (see the token file)")
    folders = [uri_to_path(f.uri) for f in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [uri_to_path(params.root_uri)]
    configuration.apply_initialization_options(ls.state, params.initialization_options, ls.show_warning)
    ls.state.set_folders(folders)
    workspace_caps = params.capabilities.workspace
    ls.supports_lens_refresh = bool(
        workspace_caps and workspace_caps.code_lens and workspace_caps.code_lens.refresh_support
    )
    ls.supports_inlay_refresh = bool(
        workspace_caps and workspace_caps.inlay_hint and workspace_caps.inlay_hint.refresh_support
    )
    text_caps = params.capabilities.text_document
    resolvable = text_caps and text_caps.inlay_hint and text_caps.inlay_hint.resolve_support
    ls.resolves_inlay_tooltips = bool(resolvable and "tooltip" in resolvable.properties)
    if params.process_id:
        watch_parent(params.process_id)


@server.feature(types.INITIALIZED)
async def initialized(ls: KernelscopeServer, params: types.InitializedParams) -> None:
    import asyncio

    ls.state.loop = asyncio.get_running_loop()
    # Watch first: whatever the client does with the configuration request below, agents'
    # writes to memory/ must refresh the lenses.
    ls.watcher.watch(list(ls.state.workspaces))
    await configuration.load_folder_configuration(ls, ls.state, ls.show_warning)
    for ws in ls.state.workspaces.values():  # hints answer from a built history, not on demand
        ls.state.workers.submit(history_hints.warm, ws)
    log.info("kernelscope serving %d optimization workspace(s)", len(ls.state.workspaces))


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: KernelscopeServer, params: types.DidChangeConfigurationParams) -> None:
    configuration.apply_change_payload(ls.state, params.settings, ls.show_warning)
    await configuration.load_folder_configuration(ls, ls.state, ls.show_warning)
    for ws in ls.state.workspaces.values():
        ls.refresh(ws, "all")  # the mode, the seeds... may have changed


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def did_change_folders(ls: KernelscopeServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    ls.state.set_folders([uri_to_path(f.uri) for f in ls.workspace.folders.values()])
    ls.watcher.watch(list(ls.state.workspaces))


def _kernel_doc(ls: KernelscopeServer, uri: str) -> WorkspaceState | None:
    path = uri_to_path(uri)
    ws = ls.state.workspace_of(path)
    return ws if ws is not None and path.resolve() == ws.workspace.kernel_path else None


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: KernelscopeServer, params: types.CodeLensParams) -> list[types.CodeLens] | None:
    ws = _kernel_doc(ls, params.text_document.uri)
    return lenses.code_lenses(ws) if ws else None


def _buffer(ls: KernelscopeServer, uri: str) -> str | None:
    """The editor's text of kernel.py (None: read the file)."""
    document = ls.workspace.get_text_document(uri)
    return document.source if document.source else None


def _kernels(ls: KernelscopeServer, ws: WorkspaceState, uri: str) -> list[Any]:
    """The kernels of the editor's text of kernel.py (positions as the user sees them), else
    of the file; scans are remembered per text, so a hover does not re-parse 1,000 lines."""
    from kernelscope.daemon.engine.workspace.kernel_scan import scan_kernel_source

    buffer = _buffer(ls, uri)
    scan = scan_kernel_source(buffer) if buffer is not None else ws.workspace.kernels()
    return scan.kernels


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: KernelscopeServer, params: types.HoverParams) -> types.Hover | None:
    """On a kernel's name: its experiment history; on any line: who introduced it and what it
    bought (performance blame)."""
    ws = _kernel_doc(ls, params.text_document.uri)
    if ws is None:
        return None
    position = params.position
    kernels = _kernels(ls, ws, params.text_document.uri)
    for kernel in kernels:
        start, end = kernel.name_column, kernel.name_column + len(kernel.name)
        if position.line == kernel.def_line - 1 and start <= position.character <= end:
            from kernelscope.daemon.lsp.hover import cached_history

            names = [k.name for k in kernels]
            table = (await ls.off_loop(cached_history, ws, kernel.name, names)).markdown
            blame = await ls.off_loop(
                history_hints.blame_markdown, ws, position.line, _buffer(ls, params.text_document.uri)
            )
            value = table + (f"\n\n---\n{blame}" if blame else "")
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=value))
    blame = await ls.off_loop(
        history_hints.blame_markdown, ws, position.line, _buffer(ls, params.text_document.uri)
    )
    if blame is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=blame))


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
async def inlay_hints(ls: KernelscopeServer, params: types.InlayHintParams) -> list[types.InlayHint] | None:
    ws = _kernel_doc(ls, params.text_document.uri)
    if ws is None:
        return None
    document = ls.workspace.get_text_document(params.text_document.uri)
    lines = document.lines if document.source else ws.workspace.kernel_path.read_text().splitlines()
    texts = lenses.kernel_summaries(ws)
    hints = []
    for kernel in _kernels(ls, ws, params.text_document.uri):
        line = kernel.def_line - 1
        if not (params.range.start.line <= line <= params.range.end.line) or line >= len(lines):
            continue
        hints.append(
            types.InlayHint(
                position=types.Position(line=line, character=len(lines[line].rstrip("\r\n"))),
                label=texts.get(kernel.name, ""),
                padding_left=True,
            )
        )
    buffer = _buffer(ls, params.text_document.uri)
    lazy = params.text_document.uri if ls.resolves_inlay_tooltips else None
    hints += await ls.off_loop(history_hints.inlay_hints, ws, buffer, params.range, lazy)
    return hints


@server.feature(types.INLAY_HINT_RESOLVE)
async def resolve_inlay_hint(ls: KernelscopeServer, hint: types.InlayHint) -> types.InlayHint:
    """The table behind a "tried" hint, asked for when the user points at it: a whole-file
    answer then carries no tables (formatting 250 of them after a history change is ~9 ms)."""
    found = history_hints.HintData.parse(hint.data)
    ws = _kernel_doc(ls, found.uri) if found is not None else None
    if found is None or ws is None:
        return hint
    tooltip = await ls.off_loop(history_hints.tried_tooltip, ws, _buffer(ls, found.uri), found)
    if tooltip is not None:
        hint.tooltip = tooltip
    return hint


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: KernelscopeServer, params: types.DidSaveTextDocumentParams) -> None:
    """Before any GPU time: the saved text against every recorded version. An identical one is
    said at once and not benchmarked again; anything else is re-benchmarked (debounced)."""
    ws = _kernel_doc(ls, params.text_document.uri)
    if ws is None:
        return
    await ls.kernel_changed(ws, params.text or _buffer(ls, params.text_document.uri))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: KernelscopeServer, params: types.DidOpenTextDocumentParams) -> None:
    ws = _kernel_doc(ls, params.text_document.uri)
    if ws is not None and ws.probe is not None:
        ls.refresh(ws)


def _command_handler(model_name: str, method_name: str) -> Any:
    """One handler per command of the vocabulary: the one parameter object is parsed with its
    protocol model on the loop (InvalidParams naming the field), then the method runs on a
    worker thread, so a command waiting on the workspace lock or SQLite's busy timeout never
    holds up lenses, hover or cancel."""

    async def handler(ls: KernelscopeServer, *args: Any) -> Any:
        from kernelscope.daemon.lsp.commands import parse
        from kernelscope.protocol import lsp as protocol

        model = getattr(protocol, model_name)
        params = model() if not args and model_name == "CancelParams" else parse(model, args)
        method = getattr(ls.commands, method_name)
        return await ls.off_loop(method, params)

    return handler


for _name, (_model, _method, _kind) in COMMANDS.items():
    server.command(_name)(_command_handler(_model, _method))


@server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
def progress_cancel(ls: KernelscopeServer, params: types.WorkDoneProgressCancelParams) -> None:
    """Cancel on a job's progress: the job that owns the token stops (its process group is
    killed) and ends `cancelled`."""
    cancelled = ls.jobs.cancel_token(params.token)
    log.info("progress %s cancelled by the client: job(s) %s", params.token, cancelled or "none")


@server.feature(WORKSPACES_REQUEST)
def workspaces(ls: KernelscopeServer, params: Any) -> dict[str, Any]:
    """Which of the editor's folders are optimization workspaces: clients ask instead of
    guessing from the files they see."""
    ls.state.rescan()
    return {
        "workspaces": [
            {"workspace": str(root), "kernel": str(state.workspace.kernel_path)}
            for root, state in sorted(ls.state.workspaces.items())
        ]
    }


def watch_parent(pid: int) -> None:
    """Exit when the editor that started us dies (pygls does not), so no daemon is orphaned."""

    def poll() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                log.info("editor process %d is gone: exiting", pid)
                os._exit(0)
            except PermissionError:
                pass  # alive, owned by someone else

    threading.Thread(target=poll, daemon=True, name="kernelscope-parent-watch").start()


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
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("KERNELSCOPE_LOG", "INFO"),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if tcp:
        server.tcp_token, path = write_token(port)
        log.info("listening on 127.0.0.1:%d; token in %s", port, path)
        server.start_tcp("127.0.0.1", port)
    else:
        server.start_io()
