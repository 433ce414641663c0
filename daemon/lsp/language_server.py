"""The language server object every handler receives (`ls`): the live state, the client's
capabilities, the jobs, the commands and the watcher, and the three things handlers ask of
it (run on the pool, which workspace a document is, a snapshot of it). Apart from the wiring
in server.py, so that a handler that calls back into `ls` never climbs back into the module
that called it (tests/lsp/test_save_flow.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from kernelscope.daemon.lsp.features import Document, lifecycle, save
from kernelscope.daemon.lsp.features.commands import Commands
from kernelscope.daemon.lsp.jobs import Jobs
from kernelscope.daemon.lsp.rpc import KernelscopeProtocol
from kernelscope.daemon.lsp.state import ServerState, WorkspaceState, uri_to_path
from kernelscope.daemon.lsp.watch import Watcher
from kernelscope.protocol.vocabulary import KERNEL_FILE, WORKSPACE_README

VERSION = "0.1.0"


@dataclass
class ClientCapabilities:
    """What the client said it can do, read once at initialize."""

    lens_refresh: bool = False
    inlay_refresh: bool = False
    resolves_tooltips: bool = False  # tooltips of inlay hints sent on inlayHint/resolve
    # Helix (every version so far) drops what workspace/executeCommand answers, errors included,
    # and every notification it does not know (kernelscope/jobFinished): the server shows them
    # (notify.command_answer, notify.job_finished); `shows_documents`: window/showDocument works
    drops_command_answers: bool = False
    drops_job_notifications: bool = False
    shows_documents: bool = False
    # Helix (25.01 and 25.07) shows a Markdown table as its text: its renderer (ui/markdown.rs)
    # leaves pulldown-cmark's ENABLE_TABLES off; LSP has no capability that says so
    draws_tables: bool = True

    def read(self, params: types.InitializeParams) -> None:
        capabilities = params.capabilities
        helix = bool(params.client_info and params.client_info.name == "helix")
        self.drops_command_answers = self.drops_job_notifications = helix
        self.draws_tables = not helix
        window = capabilities.window
        self.shows_documents = bool(window and window.show_document and window.show_document.support)
        workspace = capabilities.workspace
        self.lens_refresh = bool(workspace and workspace.code_lens and workspace.code_lens.refresh_support)
        self.inlay_refresh = bool(workspace and workspace.inlay_hint and workspace.inlay_hint.refresh_support)
        text = capabilities.text_document
        resolvable = text and text.inlay_hint and text.inlay_hint.resolve_support
        self.resolves_tooltips = bool(resolvable and "tooltip" in resolvable.properties)


class KernelscopeServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("kernelscope", VERSION, protocol_cls=KernelscopeProtocol)
        self.state = ServerState()
        self.client = ClientCapabilities()
        self.jobs = Jobs(self, self.state)
        self.commands = Commands(self, self.state, self.jobs)
        self.watcher = Watcher(
            lambda root, names: save.on_disk_change(self, root, names),
            on_armed=lambda roots: lifecycle.watching(self, roots),
        )
        self.state.on_workspaces = lambda added, removed: lifecycle.workspaces_changed(self, added, removed)
        self.tcp_token: str | None = None  # required in initializationOptions on TCP
        self.exit_code: int | None = None  # set by `exit` (features/lifecycle.py)

    async def off_loop(self, call: Callable[..., Any], *args: Any) -> Any:
        """`call(*args)` on the command pool, awaited on the loop: engine work (history, store,
        the workspace lock) never holds up lenses, hover or cancel; as the session's work, which
        writes nothing once the session has ended (lsp/session_pool.py)."""
        return await asyncio.get_running_loop().run_in_executor(self.state.command_pool, call, *args)

    def history_changed(self, ws: WorkspaceState) -> None:
        """(loop) A record was written or masked (notify.workspace_changed): the text on
        screen gets its verdict again (features/save.py)."""
        save.history_changed(self, ws)

    def kernel_workspace(self, uri: str) -> WorkspaceState | None:
        """The workspace whose kernel.py `uri` is (None for any other document)."""
        path = uri_to_path(uri).resolve()
        ws = self.state.workspace_of(path, resolved=True)
        if ws is None and path.name == KERNEL_FILE:
            ws = self.state.discover(path)
        return ws if ws is not None and path == ws.kernel_path else None

    def readme_path(self, uri: str) -> Path | None:
        """The README.md `uri` is when it is a served workspace's (None for any other document)."""
        path = uri_to_path(uri).resolve()
        if path.name != WORKSPACE_README:
            return None
        ws = self.state.workspace_of(path, resolved=True) or self.state.discover(path)
        return path if ws is not None and path == ws.kernel_path.with_name(WORKSPACE_README) else None

    def implied_workspace(self) -> str:
        """(loop) The workspace a command sent without arguments means (Helix's
        `:lsp-workspace-command` sends none): the only one served, else the only one whose
        kernel.py is open; InvalidParams otherwise."""
        roots = sorted(self.state.workspaces)
        if len(roots) != 1:
            opened = (self.kernel_workspace(uri) for uri in list(self.workspace.text_documents))
            roots = sorted({ws.root for ws in opened if ws is not None})
        if len(roots) != 1:
            raise JsonRpcInvalidParams(
                message=f"no workspace given and {len(self.state.workspaces)} served, {len(roots)} with "
                'kernel.py open: pass one object argument {"workspace": "/path/to/workspace"}'
            )
        return str(roots[0])

    def document(self, uri: str) -> Document | None:
        """(loop) A snapshot of an open kernel.py for pool work."""
        ws = self.kernel_workspace(uri)
        if ws is None:
            return None
        # the editor's buffer; a document not open there is read on the pool, by the handlers
        # that need its text (pygls's get_text_document would read it here, on the loop)
        opened = self.workspace.text_documents.get(unquote(uri))
        buffer = (opened.source or None) if opened is not None else None
        return Document(
            uri,
            buffer,
            ws.view(),
            self.client.resolves_tooltips,
            self.workspace.position_codec,
            draws_tables=self.client.draws_tables,
        )

    def show_warning(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))
