"""kernelscope's wire contract: pydantic models for records, command parameters and results.

Imports nothing from `kernelscope.daemon` or `kernelscope.kernels`. Names are loaded on first
use (PEP 562), so a process that needs one model does not build all of them at start-up.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing is 2-3 ms of the CLI fast path's start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

_WHERE = {
    "CANONICAL_UNIT": "workspace",
    "ComparisonWithPrevious": "memory",
    "Correctness": "memory",
    "CorrectnessThreshold": "workspace",
    "HardwareSpec": "workspace",
    "KernelInfo": "workspace",
    "KernelScan": "workspace",
    "MaskHalfResult": "commands",
    "MemoryRecord": "memory",
    "Optimization": "memory",
    "Performance": "memory",
    "PitfallAndFix": "memory",
    "ProfileEvidence": "memory",
    "QualityGate": "memory",
    "ReadmeInfo": "workspace",
    "ReadmeWarning": "workspace",
    "SourceError": "workspace",
    "StopCondition": "workspace",
    "TargetInfo": "workspace",
    "VersionSummary": "workspace",
    "WorkspaceSummary": "workspace",
    "as_float": "memory",
    "format_version": "memory",
    "memory_schema_template": "memory",
    "parse_version": "memory",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"kernelscope.protocol.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'kernelscope.protocol' has no attribute {name!r}")
