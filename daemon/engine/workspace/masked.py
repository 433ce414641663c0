"""What a partial restart hides, for every surface that counts or ranks a workspace's runs.

A masked memory version's experience is hidden from the active memory (`memory read`, and
`exp top`, `list`, `failures` with a workspace, docs/memory.md and docs/experiments.md). The
one rule for the figures a person or an agent is told about a kernel (run and failure counts,
best, latest; lenses, inlay hints, hover, `exp summary`, `expdb.kernel_summaries`): the runs
of masked versions are in none of them, and are counted apart (`KernelSummary.masked_runs`,
shown as `3 runs (+1 masked)`), so a person sees that the history holds more.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kernelscope.daemon.engine.memory import core

if TYPE_CHECKING:
    from kernelscope.daemon.engine.memory.records import MemoryEntry
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.protocol.experiment import KernelSummary


def masked_versions(entries: Iterable[MemoryEntry]) -> set[str]:
    """The masked versions among scanned memory entries (a corrupt file is none)."""
    return {e.version for e in entries if e.masked}


def masked_versions_at(root: Path | str) -> set[str]:
    """The masked versions of the workspace at `root`, read from its memory/ (for a command
    that has not scanned it)."""
    found = (core.read_file(number, path) for number, path in core.record_files(Path(root) / core.MEMORY_DIR))
    return {f.version for f in found if f.masked}


def kernel_summaries(
    store: ExperimentStore, root: Path | str, masked: set[str] | None = None, include_masked: bool = False
) -> list[KernelSummary]:
    """The store's per-kernel digest of the workspace at `root`, read through its masks
    (`masked`: its masked versions when the caller has them, else read from memory/).
    `include_masked` counts every run, as before a restart."""
    hidden: set[str] = set() if include_masked else masked_versions_at(root) if masked is None else masked
    return store.kernel_summaries(str(root), hidden)
