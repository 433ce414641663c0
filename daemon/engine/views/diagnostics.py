"""The messages a person (or an agent) reads under kernel.py: a failed gate or a significant
regression from the latest background probe, and what the save check found (a recorded version
with the same code, or one close to it). Plain data (`Notice`); the LSP layer places them on
the kernel's line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kernelscope.protocol.bench import BenchResult
from kernelscope.protocol.history import FingerprintCheck

REGRESSION_BELOW = 0.98  # the upper end of the 95% interval must be below this
Severity = Literal["error", "warning", "information", "hint"]


@dataclass(frozen=True)
class Notice:
    severity: Severity
    code: str
    message: str


def probe_notices(probe: BenchResult | None) -> list[Notice]:
    """A failed gate, or a statistically significant regression against the last passing
    version (GPU timings only: interpreter timings say nothing about GPU speed)."""
    if probe is None:
        return []
    if not probe.passed and probe.error is not None:
        return [Notice("error", probe.error.kind, f"benchmark gate failed: {probe.error.message}")]
    if probe.mode != "gpu" or probe.baseline == "reference" or probe.score is None or probe.score_ci is None:
        return []
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
            Notice(
                "warning",
                "regression",
                f"regression vs the last passing version: {probe.score:.3f}x "
                f"(95% CI {probe.score_ci[0]:.3f}-{probe.score_ci[1]:.3f}, {probe.mode}){detail}",
            )
        ]
    return []


def fingerprint_notice(check: FingerprintCheck) -> tuple[Notice | None, bool]:
    """The save check's notice, and whether an identical recorded version makes the background
    benchmark unnecessary."""
    if not check.matches or check.verdict is None:
        return None, False
    identical = [m for m in check.matches if m.kind == "identical" and m.version is not None]
    severity: Severity = "information"
    if check.severity in ("warning", "information", "hint"):
        severity = check.severity
    near = [m for m in check.matches if m.kind == "near"][:3]
    # the closest other versions: not the one the verdict already names
    related = "; ".join(m.verdict for m in near if m.verdict != check.verdict) if not identical else ""
    message = check.verdict + (f" (closest: {related})" if related else "")
    if identical:
        message += " — not benchmarked again (run `kernelscope.benchmark` to measure anyway)"
    return Notice(severity, "already_tried" if identical else "near_tried", message), bool(identical)
