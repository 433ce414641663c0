"""A warning on each memory record that cannot be read, published on the record's own file
(loop): on the line its reason is about (where the JSON parse stopped, the field the record
model refuses; else the first), saying why and what leaves it out (the engine's words:
views/diagnostics.py `record_notices`). Published once the workspace is in use (its first
publication after its cache is built: notify.workspace_changed) and read again at each change
of memory/ (the watcher's report, a command's write), only where a record's warning changed:
cleared when the record can be read again or is gone, and when the workspace goes.

On the record, not under kernel.py: Claude Code forgets what it delivered for a file when it
edits that file, so a warning under kernel.py reached the agent again after every edit; one on
the record is told once (until the record changes), and an editor's Problems list shows it
where the problem is. Only memory/ is read; nothing is written."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from kernelscope.daemon.lsp.features.diagnostics import SEVERITY

if TYPE_CHECKING:
    from kernelscope.daemon.engine.views.diagnostics import Notice
    from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
    from kernelscope.daemon.lsp.language_server import KernelscopeServer
    from kernelscope.daemon.lsp.state import WorkspaceState

log = logging.getLogger("kernelscope.lsp")


def record_notices(cache: WorkspaceCache) -> dict[str, Notice] | None:
    """(pool) The warning of each record that cannot be read, by its file's URI; None when
    memory/ could not be scanned (what is published stays)."""
    from kernelscope.daemon.engine.views.diagnostics import record_notices as notices_of

    try:
        return {path.as_uri(): notice for path, notice in notices_of(cache.memory()).items()}
    except Exception:  # best effort, as the check: a broken memory/ never takes the daemon down
        log.exception("could not read the memory records of %s", cache.root)
        return None


def refresh(ls: KernelscopeServer, ws: WorkspaceState) -> None:
    """(loop) The records' warnings read again on the pool and published where they changed;
    of refreshes that overlap (records written in a burst), the last one asked publishes."""
    ws.records_asked += 1
    ls.jobs.spawn(_publish(ls, ws, ws.records_asked))


async def _publish(ls: KernelscopeServer, ws: WorkspaceState, asked: int) -> None:
    found = await ls.off_loop(record_notices, ws.cache)
    if found is None or asked != ws.records_asked or ls.state.workspaces.get(ws.root) is not ws:
        return  # (a newer refresh publishes; a workspace gone had its warnings cleared)
    shown, ws.record_notices = ws.record_notices, found
    for uri in sorted(set(shown) - set(found)):  # readable again, or gone
        _send(ls, uri, None)
    for uri, notice in sorted(found.items()):
        if shown.get(uri) != notice:
            _send(ls, uri, notice)


def clear(ls: KernelscopeServer, ws: WorkspaceState) -> None:
    """(loop) The workspace went: its records' warnings go with it."""
    ws.records_asked += 1  # (a refresh under way publishes nothing)
    shown, ws.record_notices = ws.record_notices, {}
    for uri in sorted(shown):
        _send(ls, uri, None)


def _send(ls: KernelscopeServer, uri: str, notice: Notice | None) -> None:
    found = []
    if notice is not None:
        line = max(0, (notice.line or 1) - 1)
        found.append(
            types.Diagnostic(
                range=types.Range(
                    start=types.Position(line=line, character=notice.column),
                    end=types.Position(line=line, character=200),
                ),
                severity=SEVERITY[notice.severity],
                source="kernelscope",
                code=notice.code,
                message=notice.message,
            )
        )
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=found))
