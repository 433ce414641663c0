"""What a partial restart hides, for every surface that counts or ranks a workspace's runs.

A masked memory version's experience is hidden from the active memory (`memory read`,
docs/memory.md and docs/experiments.md). The
one rule for the figures a person or an agent is told about a kernel (run and failure counts,
best, latest; lenses, inlay hints, hover, `exp summary`, `expdb.kernel_summaries`): the runs
of masked versions are in none of them, and are counted apart (`KernelSummary.masked_runs`,
shown as `3 runs (+1 masked)`), so a person sees that the history holds more. A ranking or
a listing (`exp top`, `list`, `failures`, `show`, `expdb.top_experiments`,
`kernelscope.topExperiments`) leaves out the experiments of every workspace's masked versions,
with or without a workspace (`hidden_experiments`), and says how many (`hidden_count`; `exp failures`
reads the store once and finds them among its rows: `hidden_among`, `is_hidden`). The ranking
those three share is `ranking`, which counts the interpreter runs it left out too; the failures
`exp failures` and `expdb.failures` list, and what they left out, are `failures`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeGuard, TypeVar

from kernelscope.daemon.engine.memory import core

log = logging.getLogger("kernelscope.masked")
Row = TypeVar("Row")

if TYPE_CHECKING:
    from kernelscope.daemon.engine.memory.records import MemoryEntry
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.protocol.experiment import FailureCategory, KernelExperiment, KernelSummary


def masked_versions(entries: Iterable[MemoryEntry]) -> set[str]:
    """The masked versions among scanned memory entries (a corrupt file is none)."""
    return {e.version for e in entries if e.masked}


def masked_versions_at(root: Path | str, among: set[str] | None = None) -> set[str]:
    """The masked versions of the workspace at `root`, read from its memory/ (for a command
    that has not scanned it), by the rule `masked_versions` applies to a scan: a record the
    pydantic-free reader cannot vouch for is judged by the record model, as the CLI's fast path
    leaves it (a record marked masked that the model rejects is masked nowhere: `exp` hid it
    while the lens and hover counted it). A workspace whose memory/ cannot be read (a path too long, no
    permission) hides nothing: its masks cannot be known, and its rows are shown. `among`:
    only these versions are asked about (only their files are read: a ranking of a large store
    reads the versions its rows name, not every record of every workspace)."""
    if not Path(root).is_absolute():  # a relative one would be the current folder's
        return set()
    try:
        files = core.record_files(Path(root) / core.MEMORY_DIR)
        found = [
            core.read_file(number, path)
            for number, path in files
            if among is None or core.format_version(number) in among
        ]
        if all(f.vouched for f in found):
            return {f.version for f in found if f.masked}
        from kernelscope.daemon.engine.workspace.workspace import Workspace

        masked = masked_versions(Workspace(Path(root)).memory.scan())
        return masked if among is None else masked & among
    except OSError as exc:
        log.warning("masks of %s unknown (memory/ unreadable: %s): nothing hidden", root, exc)
        return set()


def kernel_summaries(
    store: ExperimentStore, root: Path | str, masked: set[str] | None = None, include_masked: bool = False
) -> list[KernelSummary]:
    """The store's per-kernel digest of the workspace at `root`, read through its masks
    (`masked`: its masked versions when the caller has them, else read from memory/).
    `include_masked` counts every run, as before a restart."""
    hidden: set[str] = set() if include_masked else masked_versions_at(root) if masked is None else masked
    return store.kernel_summaries(str(root), hidden)


class _Run(Protocol):
    @property
    def masked(self) -> bool: ...


def run_counts(runs: Iterable[_Run]) -> tuple[int, int]:
    """(runs, masked runs) of a history read without the store's summary: the runs of masked
    versions counted apart, as the store counts them (`masked_runs`). The records' lens and
    hover's heading both count with this, so they give one number for one history."""
    flags = [run.masked for run in runs]
    return len(flags) - sum(flags), sum(flags)


def has_runs(summary: KernelSummary | None) -> TypeGuard[KernelSummary]:
    """Whether the store's summary speaks for its kernel: it has runs, counted or masked (a
    kernel whose runs are all masked is `0 runs (+N masked)` with no best or latest, never
    another kernel's or the memory records' figures)."""
    return summary is not None and bool(summary.runs or summary.masked_runs)


def hidden_experiments(
    store: ExperimentStore, include_masked: bool = False, **filters: Any
) -> dict[str, set[str]]:
    """Workspace -> its masked versions, whose experiments a ranking or listing of the store
    (with these filters) leaves out: the masks of the `workspace` filter, else those of every workspace of
    the matching experiments whose folder is here and readable (a workspace deleted, moved, on
    another machine of a shared store, or unreadable hides nothing: its rows are shown as
    before). Nothing with `include_masked`."""
    if include_masked:
        return {}
    if filters.get("workspace"):
        return {filters["workspace"]: masked_versions_at(filters["workspace"])}
    # ("": recorded under no workspace, and relative ones, hide nothing: not the cwd's)
    return _masks(store.workspace_versions(**filters))


def _masks(named: Mapping[str, set[str]]) -> dict[str, set[str]]:
    return {place: masked_versions_at(place, versions) for place, versions in named.items()}


def hidden_among(rows: Iterable[KernelExperiment], include_masked: bool = False) -> dict[str, set[str]]:
    """`hidden_experiments` for rows already read with nothing hidden (`exp failures`: one read of
    the store, the hidden ones then counted among its rows, not read again): each row's
    workspace's masked versions among those the rows name."""
    if include_masked:
        return {}
    named: dict[str, set[str]] = {}
    for row in rows:
        if row.memory_version is not None:
            named.setdefault(row.workspace, set()).add(row.memory_version)
    return _masks(named)


def is_hidden(row: KernelExperiment, hidden: Mapping[str, set[str]]) -> bool:
    """Whether `hidden` leaves this row out: store/kernel_stats.not_versions's condition, for
    a row already read (a change there changes this one too)."""
    return row.memory_version is not None and row.memory_version in hidden.get(row.workspace, set())


def hidden_count(hidden: Mapping[str, set[str]], count: Callable[[Mapping[str, set[str]]], int]) -> int:
    """How many experiments `hidden` leaves out of a read (`exp top`, `list`): `count` is the
    read's size, with no limit, leaving out the versions it is given; all of those left out,
    not only those that would have made its first rows."""
    if not any(hidden.values()):
        return 0
    return count({}) - count(hidden)


@dataclass(frozen=True)
class Ranking(Generic[Row]):
    """A ranking of the store and how many it left out, for the surface to say
    (views/left_out.py). `interpreter_left_out`: the interpreter runs that would have made
    its rows, counted only when it came out short of `max_results` (on a machine without a GPU:
    all of them); `masked_left_out`: every experiment of a masked version it left out."""

    rows: list[Row]
    interpreter_left_out: int
    masked_left_out: int


def ranking(
    store: ExperimentStore,
    read: Callable[..., list[Row]],
    max_results: int = 20,
    include_buggy: bool = False,
    include_interpreter: bool = False,
    include_masked: bool = False,
    **filters: Any,
) -> Ranking[Row]:
    """The one ranking of `kernelscope exp top`, `expdb.top_experiments` and the editor's
    `kernelscope.topExperiments`: `read` (`store.top`, records; `store.top_experiments`, the
    seed's dicts of the key fields) without the experiments of masked versions
    (`hidden_experiments`), and what it left out."""
    hidden = hidden_experiments(store, include_masked, **filters)
    rows = read(max_results, include_buggy, include_interpreter, hidden, **filters)
    interpreter = 0
    if not include_interpreter and len(rows) < max_results:
        interpreter = min(max_results, store.top_count(include_buggy, True, hidden, **filters)) - len(rows)
    masked = hidden_count(hidden, lambda h: store.top_count(include_buggy, include_interpreter, h, **filters))
    return Ranking(rows, interpreter, masked)


@dataclass(frozen=True)
class Failures:
    """The failures of the store by the seed's categories and how many it left out, for the
    surface to say (views/left_out.py): `interpreter_left_out`, the interpreter runs (unless
    `include_interpreter`), `masked_left_out`, the experiments of masked versions (unless
    `include_masked`); an experiment that is both is in neither count, as in `ranking`'s."""

    groups: dict[FailureCategory, list[KernelExperiment]]
    interpreter_left_out: int
    masked_left_out: int


def failures(
    store: ExperimentStore, include_interpreter: bool = False, include_masked: bool = False, **filters: Any
) -> Failures:
    """The one listing of `kernelscope exp failures` and `expdb.failures`: one read of the
    store, the runs of masked versions (`hidden_among`) and the interpreter runs counted among
    its rows, then left out unless asked for."""
    from kernelscope.daemon.engine.store.store import is_interpreter_run

    every = store.failures(True, **filters)
    rows = [e for v in every.values() for e in v]
    hidden = hidden_among(rows, include_masked)

    def interpreter(e: KernelExperiment) -> bool:  # left out for being an interpreter run
        return not include_interpreter and is_interpreter_run(e)

    groups = {k: [e for e in v if not is_hidden(e, hidden) and not interpreter(e)] for k, v in every.items()}
    return Failures(
        groups,
        sum(1 for e in rows if not is_hidden(e, hidden) and interpreter(e)),
        sum(1 for e in rows if is_hidden(e, hidden) and not interpreter(e)),
    )
