"""The session (loop): initialize (the TCP token, the user's settings, the folders, what the
client can do), initialized (watch the workspaces, ask each folder's settings), configuration
and folder changes, kernelscope/workspaces, and exiting when the editor dies."""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidRequest

from kernelscope.daemon.lsp import configuration, notify
from kernelscope.daemon.lsp.state import WorkspaceState, uri_to_path

if TYPE_CHECKING:
    from kernelscope.daemon.lsp.language_server import KernelscopeServer

log = logging.getLogger("kernelscope.lsp")

WATCHING = "watching for changes on disk: "
"""How the log message that the watcher is armed begins; the workspaces follow, `, `-separated."""
SERVING = "kernelscope serving "
"""How the log message that the session is ready begins (every folder's settings answered, or
their wait over); the number of workspaces follows."""


def _check_token(ls: KernelscopeServer, params: types.InitializeParams) -> None:
    """On TCP the client must send the token of the token file; a refused client gets nothing more."""
    raw = params.initialization_options
    options: dict[str, Any] = raw if isinstance(raw, dict) else {}
    nested_raw = options.get("kernelscope")
    nested: dict[str, Any] = nested_raw if isinstance(nested_raw, dict) else {}
    offered = str(nested.get("token") or options.get("token") or "")
    if not hmac.compare_digest(offered, ls.tcp_token or ""):
        log.warning("refused a TCP connection without the right token")
        asyncio.get_event_loop().call_later(0.2, os._exit, 3)
        raise JsonRpcInvalidRequest(message="kernelscope: missing or wrong token (see the token file)")


def initialize(ls: KernelscopeServer, params: types.InitializeParams) -> None:
    if ls.tcp_token is not None:
        _check_token(ls, params)
    folders = [uri_to_path(f.uri) for f in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [uri_to_path(params.root_uri)]
    if not folders and params.root_path:  # deprecated, but Helix's only word outside a git repository
        folders = _root_path_folder(params.root_path)
    configuration.apply_initialization_options(ls.state, params.initialization_options, ls.show_warning)
    ls.state.set_folders(folders)
    ls.client.read(params)
    if params.process_id:
        watch_parent(params.process_id)


def _root_path_folder(root_path: str) -> list[Path]:
    """The deprecated rootPath as the editor's folder, when it is an absolute path to an existing
    folder: a path (not a URI) that LSP gives nothing to be relative to (the daemon's own working
    directory is no folder the editor named), nor a `~` to expand. Any other is ignored, said once
    in the log."""
    path = Path(root_path)
    if path.is_absolute() and path.is_dir():
        return [path]
    log.warning("initialize: ignored rootPath %r (not an absolute path to an existing folder)", root_path)
    return []


async def initialized(ls: KernelscopeServer, params: types.InitializedParams) -> None:
    ls.state.loop = asyncio.get_running_loop()
    # Watch first: whatever the client does with the configuration request below, agents'
    # writes to memory/ must refresh the lenses.
    ls.watcher.watch(list(ls.state.workspaces))
    await configuration.load_folder_configuration(ls, ls.state, ls.show_warning)
    # Histories are built when a workspace's kernel.py is first opened (features/save.py), not
    # here: a daemon started for a folder of many workspaces stays small until one is edited.
    # Said to the client too: a save from then on runs with the folders' settings.
    ls.jobs.log_message(f"{SERVING}{len(ls.state.workspaces)} optimization workspace(s)")


async def did_change_configuration(ls: KernelscopeServer, params: types.DidChangeConfigurationParams) -> None:
    configuration.apply_change_payload(ls.state, params.settings, ls.show_warning)
    await configuration.load_folder_configuration(ls, ls.state, ls.show_warning)
    for ws in ls.state.workspaces.values():
        notify.workspace_changed(ls, ws)  # the mode, the seeds... may have changed


def did_change_folders(ls: KernelscopeServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    ls.state.set_folders([uri_to_path(f.uri) for f in ls.workspace.folders.values()])


def workspaces_changed(
    ls: KernelscopeServer, added: list[WorkspaceState], removed: list[WorkspaceState]
) -> None:
    """(loop) A scan found workspaces that came or went (the editor's folders changed, an agent
    made one and opened its kernel.py, one was moved or deleted): the watcher follows the new
    set, a new one asks for its folder's settings, a gone one's probe and jobs are cancelled
    and everything published for it cleared (notify.workspace_gone: nothing is left running or
    shown for a folder no longer there).
    Before `initialized` (the folders of `initialize`), that handler starts the watcher: its
    "watching" log message needs the loop."""
    if ls.state.loop is not None:
        ls.watcher.watch(list(ls.state.workspaces))
    for ws in removed:
        ls.jobs.cancel_pending_probe(ws)
        ls.jobs.cancel(ws.root)
        if ls.state.loop is not None:
            notify.workspace_gone(ls, ws)
    if added and ls.state.loop is not None:  # (before `initialized`, that handler asks)
        ls.jobs.spawn(configuration.load_folder_configuration(ls, ls.state, ls.show_warning, added))


def watching(ls: KernelscopeServer, roots: list[Path]) -> None:
    """(watcher thread) The watches on `roots` are in place: every change from now on reaches
    the lenses. Said in the log and to the client, so that a user (or a test) who wonders
    whether an agent's write will be seen knows from when it is."""
    ls.jobs.log_message(WATCHING + ", ".join(str(root) for root in sorted(roots)))


def workspaces(ls: KernelscopeServer, params: Any) -> dict[str, Any]:
    """Which of the editor's folders are optimization workspaces: clients ask instead of
    guessing from the files they see."""
    ls.state.rescan()
    return {
        "workspaces": [
            {"workspace": str(root), "kernel": str(state.kernel_path)}
            for root, state in sorted(ls.state.workspaces.items())
        ]
    }


def shutdown(ls: KernelscopeServer, params: Any) -> None:
    """shutdown, and exit without one (an editor that quits at once): the watcher stops and
    every job is cancelled (lsp/jobs.py `stop_all`), so nothing runs on, or writes into a
    workspace, once the editor has gone, and exit does not wait for a job's end."""
    _end_session(ls)


def exit_session(ls: KernelscopeServer, params: Any) -> None:
    """exit: the process's status is 0 after a shutdown request, 1 without one (LSP 3.17), so
    an editor or a supervisor can tell a daemon told to stop from one dropped mid-session
    (`serve` exits with it: pygls swallows its own). Whether shutdown came is pygls's own record,
    which also refuses later requests (rpc.py): set once the shutdown handler has run and the
    pending requests are cancelled, before its answer; a shutdown answered with an error leaves
    it unset."""
    ls.exit_code = 0 if ls.protocol._shutdown else 1
    _end_session(ls)


def _end_session(ls: KernelscopeServer) -> None:
    ls.watcher.close()
    cancelled = ls.jobs.stop_all()
    if cancelled:
        log.info("session ending: cancelled job(s) %s", ", ".join(cancelled))


def progress_cancel(ls: KernelscopeServer, params: types.WorkDoneProgressCancelParams) -> None:
    """Cancel on a job's progress: the job that owns the token stops (its process group is
    killed) and ends `cancelled`."""
    cancelled = ls.jobs.cancel_token(params.token)
    log.info("progress %s cancelled by the client: job(s) %s", params.token, cancelled or "none")


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
