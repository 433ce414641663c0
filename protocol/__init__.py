"""kernelscope's wire contract: pydantic models for records, command parameters and results.

Imports nothing from `kernelscope.daemon` or `kernelscope.kernels`.
"""

from kernelscope.protocol.commands import MaskHalfResult
from kernelscope.protocol.memory import (
    ComparisonWithPrevious,
    Correctness,
    MemoryRecord,
    Optimization,
    Performance,
    PitfallAndFix,
    ProfileEvidence,
    QualityGate,
    as_float,
    format_version,
    memory_schema_template,
    parse_version,
)
from kernelscope.protocol.workspace import (
    CANONICAL_UNIT,
    CorrectnessThreshold,
    HardwareSpec,
    KernelInfo,
    KernelScan,
    ReadmeInfo,
    SourceError,
    StopCondition,
    TargetInfo,
    VersionSummary,
    WorkspaceSummary,
)

__all__ = [
    "CANONICAL_UNIT",
    "ComparisonWithPrevious",
    "Correctness",
    "CorrectnessThreshold",
    "HardwareSpec",
    "KernelInfo",
    "KernelScan",
    "MaskHalfResult",
    "MemoryRecord",
    "Optimization",
    "Performance",
    "PitfallAndFix",
    "ProfileEvidence",
    "QualityGate",
    "ReadmeInfo",
    "SourceError",
    "StopCondition",
    "TargetInfo",
    "VersionSummary",
    "WorkspaceSummary",
    "as_float",
    "format_version",
    "memory_schema_template",
    "parse_version",
]
