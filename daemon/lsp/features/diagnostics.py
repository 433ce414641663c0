"""What is published under kernel.py (loop): the save check's notices (a recorded version with
the same code, or a close one; the static rules, each on its own line) and the latest probe's
(a failed gate, a regression: only while kernel.py holds the text it measured), on the first
kernel's line unless they say where. The messages are views/diagnostics.py's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from kernelscope.daemon.lsp.features import UTF32, to_client
from kernelscope.daemon.lsp.state import WorkspaceState
from kernelscope.protocol.text_positions import source_lines

if TYPE_CHECKING:
    from pygls.workspace.position_codec import PositionCodec

    from kernelscope.daemon.engine.views.diagnostics import Notice

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def diagnostics(ws: WorkspaceState, codec: PositionCodec = UTF32) -> list[types.Diagnostic]:
    """kernel.py's diagnostics, columns in the client's units (`codec`)."""
    if not ws.notices and ws.probe is None:
        return []  # nothing to say: no engine import, no scan of kernel.py
    from kernelscope.daemon.engine.views.diagnostics import probe_notices

    supervised = ws.probe is not None and not ws.stale and ws.cache.supervised()
    notices: list[Notice] = [*ws.notices, *probe_notices(ws.probe, supervised, ws.stale)]
    if not notices:
        return []  # (and no scan of kernel.py: a workspace nobody looked at stays unread)
    # the text the notices point into, split only when one of them says where
    lines = source_lines(ws.checked_text or "") if any(n.line is not None for n in notices) else []
    # on the first kernel of the text they are about (the buffer's: unsaved lines above it move it)
    scan = ws.cache.buffer_parse.scan(ws.checked_text)[0] if ws.checked_text else ws.cache.kernels()
    line = (scan.kernels[0].def_line - 1) if scan.kernels else 0
    where = types.Range(
        start=types.Position(line=line, character=0), end=types.Position(line=line, character=200)
    )
    return [
        types.Diagnostic(
            range=where if n.line is None else _range(n, codec, lines),
            severity=SEVERITY[n.severity],
            source="kernelscope",
            code=n.code,
            message=n.message,
        )
        for n in notices
    ]


def _range(notice: Notice, codec: PositionCodec, lines: list[str]) -> types.Range:
    line = max(0, (notice.line or 1) - 1)
    end_line = max(line, (notice.end_line or notice.line or 1) - 1)
    end_column = notice.end_column if notice.end_column is not None else 200
    return types.Range(
        start=to_client(codec, lines, line, max(0, notice.column)),
        end=to_client(codec, lines, end_line, max(0, end_column)),
    )


def problem_diagnostics(ws: WorkspaceState) -> dict[str, list[types.Diagnostic]]:
    """The last probe's problem lint (kernels/problem_lint.py), on the problem file's lines:
    what a trivial kernel would get away with, said where the problem can be fixed."""
    from pathlib import Path

    found: dict[str, list[types.Diagnostic]] = {}
    for finding in ws.probe.problem_lint if ws.probe is not None else []:
        if not finding.file:
            continue
        line = max(0, (finding.line or 1) - 1)
        found.setdefault(Path(finding.file).as_uri(), []).append(
            types.Diagnostic(
                range=types.Range(
                    start=types.Position(line=line, character=0), end=types.Position(line=line, character=200)
                ),
                severity=types.DiagnosticSeverity.Warning,
                source="kernelscope",
                code=f"problem:{finding.rule}",
                message=f"{finding.message} (seen on {finding.config})",
            )
        )
    return found
