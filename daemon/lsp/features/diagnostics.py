"""What is published under kernel.py (loop): the save check's notices (a recorded version with
the same code, or a close one) and the latest probe's (a failed gate, a regression), each on
the first kernel's line. The messages are views/diagnostics.py's."""

from __future__ import annotations

from lsprotocol import types

from kernelscope.daemon.lsp.state import WorkspaceState

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def diagnostics(ws: WorkspaceState) -> list[types.Diagnostic]:
    from kernelscope.daemon.engine.views.diagnostics import Notice, probe_notices

    scan = ws.cache.kernels()
    line = (scan.kernels[0].def_line - 1) if scan.kernels else 0
    where = types.Range(
        start=types.Position(line=line, character=0), end=types.Position(line=line, character=200)
    )
    notices: list[Notice] = [*ws.notices, *probe_notices(ws.probe)]
    return [
        types.Diagnostic(
            range=where, severity=SEVERITY[n.severity], source="kernelscope", code=n.code, message=n.message
        )
        for n in notices
    ]
