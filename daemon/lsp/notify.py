"""Everything the daemon tells the client unasked (event loop only): that a workspace's lenses,
hints and diagnostics changed (kernel.py's, and the problem file's lint from the last probe),
and that a job ended.

`workspace_changed` is the one place a change becomes visible: it tells the workspace's cache
which sources changed (engine/workspace/cache.py drops what was made of them), asks the client
to refresh lenses and hints, and publishes kernel.py's diagnostics."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from kernelscope.daemon.lsp.features.diagnostics import diagnostics, problem_diagnostics
from kernelscope.daemon.lsp.state import WorkspaceState
from kernelscope.protocol.vocabulary import JOB_FINISHED

if TYPE_CHECKING:
    from kernelscope.daemon.engine.workspace.cache import Source
    from kernelscope.daemon.lsp.language_server import KernelscopeServer


def workspace_changed(ls: KernelscopeServer, ws: WorkspaceState, *sources: Source) -> None:
    """`sources` of the workspace changed (none: only its live state, e.g. job progress). A
    workspace no longer served (its folder removed from the editor, moved or deleted) shows
    nothing more: its diagnostics were cleared when it went (lifecycle.workspaces_changed),
    and the end of its cancelled job or of a check still under way must not publish them again."""
    if ls.state.workspaces.get(ws.root) is not ws:
        return
    ws.sources_changed(*sources)
    if {"memory", "store"} & set(sources):
        ls.history_changed(ws)  # a new record can make the text a recorded version's: check again
    if ls.client.lens_refresh:
        ls.workspace_code_lens_refresh(None)
    if ls.client.inlay_refresh:
        ls.workspace_inlay_hint_refresh(None)
    found = diagnostics(ws, ls.workspace.position_codec)
    kernel_uri = ws.kernel_path.as_uri()
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=kernel_uri, diagnostics=found))
    lint = problem_diagnostics(ws)
    for uri in sorted(ws.lint_uris - set(lint)):  # a problem file the last probe found nothing in
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    for uri, found in lint.items():
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=found))
    ws.lint_uris = frozenset(lint)


def job_finished(ls: KernelscopeServer, outcome: dict[str, Any]) -> None:
    """The typed notification (protocol.lsp.JobFinished), validated before it is sent."""
    from kernelscope.protocol.lsp import JobFinished

    finished = JobFinished.model_validate(outcome)
    ls.protocol.notify(JOB_FINISHED, finished.model_dump(mode="json", by_alias=True, exclude_none=True))
