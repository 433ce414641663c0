"""The static rules (protocol/static_rules.py) as a gate: before the candidate is imported, a
rule of severity error fails the run as `static_check`, naming the rule and the line; the
warnings go into the result's messages. Nothing of the candidate runs for this.

The kind decides which function is the timed path (KernelBench's `ModelNew.forward`, the
native `kernel_fn`, SOL-ExecBench's `run`): the adapter the runner was given, else the one
the kinds rule (protocol/kinds.py) picks for the folder. Whether a Triton kernel is asked of
the candidate at all is decided here once, for the static rules and the runtime's "no
Triton, no score" alike (`framework_solution`)."""

from __future__ import annotations

from pathlib import Path

from kernelscope.protocol.kinds import Folder, adapter_for, framework_solution, kinds
from kernelscope.protocol.static_rules import FRAMEWORK_BASELINE_MARK, Finding, check_source

MAX_NAMED = 5


def kind_of(workspace: Path, reference: Path, adapter: str | None) -> str | None:
    chosen = adapter or adapter_for(Folder(workspace, reference))
    return next((spec.name for spec in kinds() if spec.adapter == chosen), None)


def framework(candidate: Path, workspace: Path, reference: Path, adapter: str | None) -> str | None:
    """Why no Triton kernel is asked of the candidate, or None: a file marked as a deliberate
    framework baseline (`# kernelscope: framework-baseline`, kernelscope's own mark), or a
    workspace whose kind declares a non-Triton solution (a SOL-ExecBench solution.json whose
    languages hold no Triton, as atrex's V0 in PyTorch: protocol/kinds.py)."""
    try:
        marked = FRAMEWORK_BASELINE_MARK.search(candidate.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        marked = None
    if marked:
        return "framework baseline (`# kernelscope: framework-baseline` in the candidate)"
    return framework_solution(Folder(workspace, reference), kind_of(workspace, reference, adapter))


def describe(path: Path, finding: Finding) -> str:
    return f"{path.name}:{finding.line}: {finding.message} [{finding.rule}, {finding.source}]"


def static_gate(
    candidate: Path, workspace: Path, reference: Path, adapter: str | None
) -> tuple[str | None, list[str]]:
    """(why the candidate fails before it runs, or None; the warnings)."""
    try:
        text = candidate.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, []  # the import reports it
    kind = kind_of(workspace, reference, adapter)
    declared = framework_solution(Folder(workspace, reference), kind) is not None
    findings = check_source(text, kind=kind, framework=declared)
    errors = [f for f in findings if f.severity == "error"]
    warnings = [f"static check: {describe(candidate, f)}" for f in findings if f.severity != "error"]
    if not errors:
        return None, warnings
    more = f" (and {len(errors) - MAX_NAMED} more)" if len(errors) > MAX_NAMED else ""
    named = "; ".join(describe(candidate, f) for f in errors[:MAX_NAMED])
    return f"the candidate breaks a static rule before it runs: {named}{more}", warnings
