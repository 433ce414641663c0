"""Hover on a kernel's name: its experiments as a Markdown table."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kernelscope.daemon.engine.lens_text import memory_scores
from kernelscope.daemon.engine.memory.records import MemoryEntry
from kernelscope.daemon.engine.store import ExperimentStore, StoreError
from kernelscope.daemon.lsp.state import WorkspaceState
from kernelscope.protocol.experiment import KernelExperiment
from kernelscope.protocol.lsp import HistoryEntry, HistoryResult

FAILED_STATUSES = ("failed", "timeout", "FAIL", "TIMEOUT_FAIL")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:80]


@dataclass
class _Sources:
    """What every kernel's table is made of, read once: the memory records, the workspace's
    experiments (of one kernel, or all of them), the target line and the agents' notes."""

    records: dict[str, MemoryEntry]
    experiments: list[KernelExperiment]
    target: str
    notes: list[str]
    # the entries from memory records, for kernels without experiments: made once and shared
    # by the copies `histories` makes per kernel (a workspace kernelscope has never seen has
    # none for any of its kernels)
    from_memory: list[list[HistoryEntry]] = field(default_factory=list)


def _sources(state: WorkspaceState, kernel: str | None) -> _Sources:
    from kernelscope.daemon.engine.lens_text import file_lens, recorded_notes

    ws = state.workspace
    records = {e.version: e for e in ws.memory.scan()}
    try:
        store = ExperimentStore(state.settings.db_url)
        filters: dict[str, Any] = {"kernel": kernel} if kernel else {}
        experiments = store.list_experiments(workspace=str(ws.root), **filters)
    except StoreError:
        experiments = []
    return _Sources(
        records=records,
        experiments=experiments,
        target=file_lens(ws),
        notes=recorded_notes(ws.root, list(records.values())),
    )


def history(state: WorkspaceState, kernel: str | None) -> HistoryResult:
    """The history of one kernel (all of the workspace's when None): entries and Markdown."""
    return _history(state, kernel, _sources(state, kernel))


def histories(state: WorkspaceState, kernels: list[str]) -> dict[str, HistoryResult]:
    """Every kernel's history from one read of memory and one store query (a query per
    kernel is ~20 ms with 100,000 experiments; hovering 50 kernels would pay it 50 times)."""
    shared = _sources(state, None)
    by_kernel: dict[str, list[KernelExperiment]] = {name: [] for name in kernels}
    for exp in shared.experiments:
        for name in set(exp.kernels):
            if name in by_kernel:
                by_kernel[name].append(exp)
    return {
        name: _history(state, name, replace(shared, experiments=found)) for name, found in by_kernel.items()
    }


def _masked(records: dict[str, MemoryEntry], version: str | None) -> bool:
    entry = records.get(version) if version else None
    return bool(entry and entry.record is not None and entry.record.is_masked)


def _memory_entries(state: WorkspaceState, sources: _Sources) -> list[HistoryEntry]:
    """A workspace kernelscope has never seen: its memory records as the history."""
    if sources.from_memory:
        return sources.from_memory[0]
    ws = state.workspace
    records = sources.records
    entries: list[HistoryEntry] = []
    readme = ws.readme() if ws.readme_path.is_file() else None
    for version_score in memory_scores(list(records.values()), readme):
        record = records[version_score.version].record
        action = ""
        if record is not None and isinstance(record.optimization, dict):
            action = str(record.optimization.get("action_description") or "")
        elif record is not None and record.optimization is not None:
            action = str(getattr(record.optimization, "action_description", "") or "")
        entries.append(
            HistoryEntry(
                version=version_score.version,
                score=version_score.score,
                status=version_score.label.upper()
                if version_score.label
                else "PASS"
                if version_score.passed
                else "FAIL",
                summary=action,
                masked=_masked(records, version_score.version),
                failed=not version_score.passed and not version_score.label,
            )
        )
    sources.from_memory.append(entries)
    return entries


def _history(state: WorkspaceState, kernel: str | None, sources: _Sources) -> HistoryResult:
    ws = state.workspace
    entries = [
        HistoryEntry(
            version=exp.memory_version,
            score=exp.score,
            status=exp.status,
            summary=exp.change_summary,
            experiment_id=exp.id,
            masked=_masked(sources.records, exp.memory_version),
            failed=exp.is_buggy or exp.status in FAILED_STATUSES,
        )
        for exp in sources.experiments
    ]
    if not entries:
        entries = _memory_entries(state, sources)
    title = f"**{kernel}**" if kernel else f"**{ws.root.name}**"
    lines = [
        f"{title}: {len(entries)} experiments",
        "",
        "| version | score | status | summary |",
        "|---|---:|---|---|",
    ]
    for entry in entries[-30:]:
        score = "-" if entry.score is None else f"{entry.score:.3f}x"
        status = f"{entry.status} (masked)" if entry.masked else entry.status
        lines.append(f"| {entry.version or '-'} | {score} | {status} | {_cell(entry.summary)} |")
    if sources.notes:
        lines += ["", "**Recorded by the agents** (newest first)", "", *sources.notes]

    return HistoryResult(
        workspace=str(ws.root),
        kernel=kernel,
        entries=entries,
        markdown="\n".join(lines),
        target=sources.target,
    )


def cached_history(state: WorkspaceState, kernel: str, kernels: list[str]) -> HistoryResult:
    """`history` for hover on a kernel's name. The first such hover after a change of the
    workspace builds the tables of all `kernels` (the ones in kernel.py) at once; later ones,
    on any kernel, are lookups. A refresh drops the tables; tables being built meanwhile land
    in the dropped cache, never in the new one."""
    table: dict[str, HistoryResult] = state.cache.setdefault("histories", {})
    if kernel not in table:
        table.update(histories(state, sorted({*kernels, kernel})))
    return table[kernel]
