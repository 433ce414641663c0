"""kernel.py changed (loop): a save (didSave), a buffer opened (didOpen), or the file rewritten
on disk by an agent or git (the watcher). First the text is checked against every recorded
version on a pool (no GPU time, no workspace code: it runs in untrusted workspaces too); an
identical one is said at once and not benchmarked again; anything else is re-benchmarked,
debounced, when the workspace is trusted (lsp/jobs.py, engine: workflows/probe.py).

One save is reported twice (didSave, and the watcher seeing the file change), the second up to
seconds later on a loaded machine: a text already handled whose check or probe is still under
way, or whose numbers are on screen, is not handled again (a second probe would cancel the
first and mark its fresh numbers stale).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from kernelscope.daemon.engine.views.diagnostics import Notice, fingerprint_notice
from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
from kernelscope.daemon.lsp import notify
from kernelscope.daemon.lsp.state import WorkspaceState

if TYPE_CHECKING:
    from kernelscope.daemon.lsp.server import KernelscopeServer

log = logging.getLogger("kernelscope.lsp")


def check_text(cache: WorkspaceCache, text: str) -> tuple[tuple[Notice, ...], bool]:
    """(pool) The saved text against every recorded version: its notices, and whether an
    identical recorded version makes the background benchmark unnecessary."""
    try:
        check = cache.history().fingerprint(text)
    except Exception:  # the check is best effort: a broken history never blocks a save
        log.exception("fingerprint check failed for %s", cache.root)
        return (), False
    notice, identical = fingerprint_notice(check)
    return ((notice,) if notice else ()), identical


async def kernel_changed(ls: KernelscopeServer, ws: WorkspaceState, text: str | None) -> None:
    if text is None:
        text = ws.cache.workspace.kernel_path.read_text(encoding="utf-8", errors="replace")
    digest = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()
    if digest == ws.kernel_digest and (
        ws.checking_kernel == digest or not ws.stale or ls.jobs.probe_in_flight(ws)
    ):
        return
    ws.kernel_digest = ws.checking_kernel = digest
    ws.kernel_edited()
    notify.workspace_changed(ls, ws, "kernel")
    try:
        notices, identical = await ls.off_loop(check_text, ws.cache, text)
    finally:
        if ws.checking_kernel == digest:
            ws.checking_kernel = None
    if ws.kernel_digest != digest:  # a newer text arrived meanwhile: its check decides
        return
    ws.notices = notices
    if identical:  # already measured (or already failed): the numbers on screen are this code's
        ls.jobs.cancel_pending_probe(ws)
        ls.jobs.cancel_running_probe(ws)  # it measures code that is no longer there
        ws.already_measured()
    else:
        ls.jobs.schedule_probe(ws)
    notify.workspace_changed(ls, ws)


async def did_save(ls: KernelscopeServer, params: types.DidSaveTextDocumentParams) -> None:
    """Before any GPU time: the saved text against every recorded version (module docstring)."""
    ws = ls.kernel_workspace(params.text_document.uri)
    if ws is None:
        return
    document = ls.workspace.get_text_document(params.text_document.uri)
    await kernel_changed(ls, ws, params.text or document.source or None)


def did_open(ls: KernelscopeServer, params: types.DidOpenTextDocumentParams) -> None:
    """kernel.py opened: its workspace's history is built now (in the background, once), and
    a probe already on screen is published again."""
    ws = ls.kernel_workspace(params.text_document.uri)
    if ws is None:
        return
    if not ws.history_started:
        ws.history_started = True
        ls.state.workers.submit(warm_history, ws.cache)
    if ws.probe is not None:
        notify.workspace_changed(ls, ws)


def warm_history(cache: WorkspaceCache) -> None:
    """(pool) Build the history once a workspace's kernel.py is open (seconds for a thousand
    versions, once), so hints answer from a built history."""
    import gc

    try:
        cache.history().warm()
    except Exception:  # hints are best effort: a broken history never takes the daemon down
        log.exception("could not build the history of %s", cache.root)
        return
    # The history of a thousand versions is hundreds of thousands of long-lived objects: left
    # in the collector's oldest generation, every full collection walks them all (a 20 ms
    # pause in 1-2% of hovers). Frozen, they are skipped until the next history change.
    gc.collect()
    gc.freeze()


def on_disk_change(ls: KernelscopeServer, root: Path, names: set[str]) -> None:
    """From the watcher thread: an agent or git changed files of a workspace."""

    def handle() -> None:
        if any(n in ("README.md", "kernel.py") for n in names) or root not in ls.state.workspaces:
            ls.state.rescan()
        ws = ls.state.workspaces.get(root)
        if ws is None:
            return
        sources = ws.cache.files_changed(names)
        notify.workspace_changed(ls, ws)
        if "kernel" in sources:  # an agent rewrote it: the same check as a save
            ls.jobs.spawn(kernel_changed(ls, ws, None))

    ls.state.on_loop(handle)
