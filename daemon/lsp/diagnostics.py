"""Diagnostics from the latest background probe: a failed gate, or a statistically
significant regression against the last passing version, on the kernel's line."""

from __future__ import annotations

from lsprotocol import types

from kernelscope.daemon.lsp.state import WorkspaceState

REGRESSION_BELOW = 0.98  # the upper end of the 95% interval must be below this


def probe_diagnostics(state: WorkspaceState) -> list[types.Diagnostic]:
    probe = state.probe
    if probe is None:
        return []
    scan = state.workspace.kernels()
    line = (scan.kernels[0].def_line - 1) if scan.kernels else 0
    where = types.Range(
        start=types.Position(line=line, character=0), end=types.Position(line=line, character=200)
    )
    if not probe.passed and probe.error is not None:
        return [
            types.Diagnostic(
                range=where,
                severity=types.DiagnosticSeverity.Error,
                source="kernelscope",
                code=probe.error.kind,
                message=f"benchmark gate failed: {probe.error.message}",
            )
        ]
    if probe.mode != "gpu" or probe.baseline == "reference" or probe.score is None or probe.score_ci is None:
        return []  # interpreter timings say nothing about GPU speed: no regression verdicts
    if probe.score_ci[1] < REGRESSION_BELOW:
        worst = min(
            (c for c in probe.configs if c.speedup is not None), key=lambda c: c.speedup or 1.0, default=None
        )
        detail = (
            f"; worst {worst.name}: {worst.speedup:.3f}x "
            f"({worst.candidate_ms:.4g} ms vs {worst.baseline_ms:.4g} ms)"
            if (worst and worst.speedup and worst.candidate_ms and worst.baseline_ms)
            else ""
        )
        return [
            types.Diagnostic(
                range=where,
                severity=types.DiagnosticSeverity.Warning,
                source="kernelscope",
                code="regression",
                message=(
                    f"regression vs the last passing version: {probe.score:.3f}x "
                    f"(95% CI {probe.score_ci[0]:.3f}-{probe.score_ci[1]:.3f}, {probe.mode}){detail}"
                ),
            )
        ]
    return []
