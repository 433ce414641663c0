"""The static rules (protocol/static_rules.py) as a gate: before the candidate is imported, a
rule of severity error fails the run as `static_check`, naming the rule and the line; the
warnings go into the result's messages. Nothing of the candidate runs for this.

The kind decides which function is the timed path (KernelBench's `ModelNew.forward`, the
native `kernel_fn`, SOL-ExecBench's `run`): the adapter the runner was given, else the one
the kinds rule (protocol/kinds.py) picks for the folder."""

from __future__ import annotations

from pathlib import Path

from kernelscope.protocol.kinds import Folder, adapter_for, kinds
from kernelscope.protocol.static_rules import Finding, check_source

MAX_NAMED = 5


def kind_of(workspace: Path, reference: Path, adapter: str | None) -> str | None:
    chosen = adapter or adapter_for(Folder(workspace, reference))
    return next((spec.name for spec in kinds() if spec.adapter == chosen), None)


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
    findings = check_source(text, kind=kind_of(workspace, reference, adapter))
    errors = [f for f in findings if f.severity == "error"]
    warnings = [f"static check: {describe(candidate, f)}" for f in findings if f.severity != "error"]
    if not errors:
        return None, warnings
    more = f" (and {len(errors) - MAX_NAMED} more)" if len(errors) > MAX_NAMED else ""
    named = "; ".join(describe(candidate, f) for f in errors[:MAX_NAMED])
    return f"the candidate breaks a static rule before it runs: {named}{more}", warnings
