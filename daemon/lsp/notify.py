"""Everything the daemon tells the client unasked (event loop only): that a workspace's lenses,
hints and diagnostics changed (kernel.py's, and the problem file's lint from the last probe),
that a job ended, and to a client that drops executeCommand's answers (Helix) what a command
answered.

`workspace_changed` is the one place a change becomes visible: it tells the workspace's cache
which sources changed (engine/workspace/cache.py drops what was made of them), asks the client
to refresh lenses and hints, and publishes kernel.py's diagnostics (and, once the workspace is
in use and whenever memory/ changes, the warnings on records that cannot be read:
features/records.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from kernelscope.daemon.engine import WriteFailed
from kernelscope.daemon.engine.views.answer_files import write_answer
from kernelscope.daemon.engine.views.command_answers import command_answer_line
from kernelscope.daemon.lsp.features import records
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
    if not ws.check_pending:  # (else the text's check publishes them when it ends)
        found = diagnostics(ws, ls.workspace.position_codec)
        kernel_uri = ws.kernel_path.as_uri()
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=kernel_uri, diagnostics=found)
        )
        ws.notices_published()
    _publish_lint(ls, ws, problem_diagnostics(ws))
    if ws.cache_built and ("memory" in sources or not ws.records_asked):
        records.refresh(ls, ws)  # the warnings on records that cannot be read, where they changed


def workspace_gone(ls: KernelscopeServer, ws: WorkspaceState) -> None:
    """(loop) A workspace no longer served (its folder removed from the editor, moved or
    deleted): everything published for it is cleared, kernel.py's diagnostics, the problem
    files' lint and the records' warnings, and forgotten. An editor keeps a file's last
    publication until it is replaced (VS Code's Problems list, Neovim's vim.diagnostic), so a
    folder no longer open went on listing its problem file's lint."""
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=ws.kernel_path.as_uri(), diagnostics=[])
    )
    _publish_lint(ls, ws, {})
    records.clear(ls, ws)


def _publish_lint(ls: KernelscopeServer, ws: WorkspaceState, lint: dict[str, list[types.Diagnostic]]) -> None:
    """The problem files' lint is now `lint`: each file in it published, each that held some
    before and holds none now (the last probe found nothing there, the workspace went) cleared."""
    for uri in sorted(ws.lint_uris - set(lint)):
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    for uri, found in lint.items():
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=found))
    ws.lint_uris = frozenset(lint)


def job_finished(ls: KernelscopeServer, outcome: dict[str, Any]) -> None:
    """The typed notification (protocol.lsp.JobFinished), validated before it is sent; to a
    client that drops it (Helix), a job a person started also as a message, as the other
    clients show it: without it a benchmark, iteration or restart started from Helix ended
    with no word (background probes speak through lenses and diagnostics)."""
    from kernelscope.protocol.lsp import JobFinished

    finished = JobFinished.model_validate(outcome)
    ls.protocol.notify(JOB_FINISHED, finished.model_dump(mode="json", by_alias=True, exclude_none=True))
    if ls.client.drops_job_notifications and not finished.background:
        said = finished.error or ("cancelled" if finished.cancelled else "done")
        kind = types.MessageType.Error if finished.error else types.MessageType.Info
        message = f"kernelscope {finished.kind}: {said}"
        ls.window_show_message(types.ShowMessageParams(type=kind, message=message))


def command_answer(ls: KernelscopeServer, command: str, result: Any = None, error: str | None = None) -> None:
    """What a command answered, shown to a client that drops executeCommand's answer (Helix):
    an error, or a result without markdown, as one window/showMessage line (a sentence from
    engine/views/command_answers.py, never the JSON); a result's markdown (the history, a
    comparison) in a file outside the workspace (engine/views/answer_files.py), opened with
    window/showDocument where the client can (Helix 25.07+), else named in a message as
    `:open <file>`."""
    if error is not None:
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=f"{command}: {error}")
        )
        return
    markdown = result.get("markdown") if isinstance(result, dict) else None
    if not (isinstance(markdown, str) and markdown):
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=command_answer_line(command, result))
        )
        return
    try:
        path = write_answer(str(result.get("workspace") or ""), command, markdown)
    except WriteFailed as exc:
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=f"{command}: {exc}")
        )
        return
    if ls.client.shows_documents:  # Helix 25.07 and later
        ls.window_show_document(types.ShowDocumentParams(uri=path.as_uri(), take_focus=True))
    else:  # Helix 25.01: the command that opens it
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=f"{command}: :open {path}")
        )
