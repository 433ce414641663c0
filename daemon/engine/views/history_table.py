"""The experiment history of a kernel (or of the whole workspace) as entries and a Markdown
table: what hover on a kernel's name and `kernelscope.showHistory` show. For a client that draws
no Markdown tables (Helix: its renderer leaves pulldown-cmark's tables off, so `| v3 |` and
`|---|` showed as typed) the same rows are aligned plain text in a code block.

Experiments in the store give per-kernel rows; a workspace kernelscope has never seen has only
its memory records, which then are the history (scored by memory/scores.py, as every surface).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from kernelscope.daemon.engine.memory.records import MemoryEntry
from kernelscope.daemon.engine.views.lens_text import (
    cached_file_lens,
    recorded_notes,
    runs_text,
    tooltip_lines,
)
from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
from kernelscope.daemon.engine.workspace.masked import run_counts
from kernelscope.protocol.experiment import KernelExperiment
from kernelscope.protocol.lsp import HistoryEntry, HistoryResult
from kernelscope.protocol.record_rules import format_score, section_get

FAILED_STATUSES = ("failed", "timeout", "FAIL", "TIMEOUT_FAIL")


HEADERS = ("version", "score", "status", "summary")
SUMMARY_WIDTH = 80  # characters of a summary a history row shows


def _summary(text: str) -> str:
    """A summary on one line, as both forms of the table show it: every whitespace run (line
    breaks, tabs: either would break a row or the columns) one space, cut at SUMMARY_WIDTH."""
    return " ".join(text.split())[:SUMMARY_WIDTH]


def history_markdown(
    title: str,
    entries: list[HistoryEntry],
    notes: list[str],
    draws_tables: bool = True,
    targets: list[str] | None = None,
) -> str:
    """The history as a person reads it: `title`, the newest 30 entries' rows, the README's
    stop conditions in full (`targets`: lens_text.stop_condition_lines) and the agents'
    `notes`; the rows as a Markdown table, or, for a client that does not draw tables, as
    columns aligned in a ```text block (monospaced; the score right-aligned as the table's)."""
    rows = []
    for entry in entries[-30:]:
        score = "-" if entry.score is None else format_score(entry.score)
        status = f"{entry.status} (masked)" if entry.masked else entry.status
        rows.append((entry.version or "-", score, status, _summary(entry.summary)))
    lines = [title, ""]
    if draws_tables:
        lines += [f"| {' | '.join(HEADERS)} |", "|---|---:|---|---|"]
        # a pipe in a summary escaped after the cut: an escape cut in half left a backslash
        cells = [(*row[:3], row[3].replace("|", "\\|")) for row in rows]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
    else:
        widths = [max(len(cells[i]) for cells in (HEADERS, *rows)) for i in range(len(HEADERS))]

        def line(cells: tuple[str, ...]) -> str:
            version, score, status, summary = cells
            return f"{version:<{widths[0]}}  {score:>{widths[1]}}  {status:<{widths[2]}}  {summary}".rstrip()

        text = [line(HEADERS), line(tuple("-" * w for w in widths)), *map(line, rows)]
        # a fence longer than any run of backticks in a summary, which would otherwise close it
        fence = "`" * max([3, *(len(run) + 1 for run in re.findall("`+", "\n".join(text)))])
        lines += [f"{fence}text", *text, fence]
    if targets:
        lines += ["", "**Stop conditions**", "", *(f"- {line}" for line in targets)]
    if notes:
        lines += ["", "**Recorded by the agents** (newest first)", "", *notes]
    return "\n".join(lines)


@dataclass
class _Sources:
    """What every kernel's table is made of, read once: the memory records, the workspace's
    experiments (of one kernel, or all of them), the target line and the agents' notes."""

    records: dict[str, MemoryEntry]
    experiments: list[KernelExperiment]
    target: str
    notes: list[str]
    targets: list[str]  # every stop condition in full (the target line shortens them)
    # the entries from memory records, for kernels without experiments: made once and shared
    # by the copies `histories` makes per kernel (a workspace kernelscope has never seen has
    # none for any of its kernels)
    from_memory: list[list[HistoryEntry]] = field(default_factory=list)


def _sources(cache: WorkspaceCache, kernel: str | None) -> _Sources:
    from kernelscope.daemon.engine.store import StoreError

    entries = cache.memory()
    records = {e.version: e for e in entries}
    experiments: list[KernelExperiment] = []
    store = cache.store()
    if store is not None:
        try:
            filters: dict[str, Any] = {"kernel": kernel} if kernel else {}
            experiments = store.list_experiments(workspace=str(cache.root), **filters)
        except StoreError:
            experiments = []
    return _Sources(
        records=records,
        experiments=experiments,
        target=cached_file_lens(cache),  # (what the lens shows, judged once: stop_judgements.py)
        notes=recorded_notes(cache.root, entries),
        targets=tooltip_lines(cache),
    )


def history(cache: WorkspaceCache, kernel: str | None) -> HistoryResult:
    """The history of one kernel (all of the workspace's when None): entries and Markdown."""
    return _history(cache, kernel, _sources(cache, kernel))


def histories(
    cache: WorkspaceCache, kernels: list[str], draws_tables: bool = True
) -> dict[str, HistoryResult]:
    """Every kernel's history from one read of memory and one store query (a query per
    kernel is ~20 ms with 100,000 experiments; hovering 50 kernels would pay it 50 times)."""
    shared = _sources(cache, None)
    by_kernel: dict[str, list[KernelExperiment]] = {name: [] for name in kernels}
    for exp in shared.experiments:
        for name in set(exp.kernels):
            if name in by_kernel:
                by_kernel[name].append(exp)
    return {
        name: _history(cache, name, replace(shared, experiments=found), draws_tables)
        for name, found in by_kernel.items()
    }


def kernel_history(
    cache: WorkspaceCache, kernel: str, kernels: list[str], draws_tables: bool = True
) -> HistoryResult:
    """`history` for hover on a kernel's name (its rows as aligned text for a client that does
    not draw tables: `history_markdown`). The first such hover after memory, the README or
    the store changed builds the tables of all `kernels` (the ones in kernel.py) at once; later
    ones, on any kernel, are lookups (the cache keeps them; job progress does not drop them)."""
    wanted = sorted({*kernels, kernel})
    tables = cache.get(
        f"history_tables:{'' if draws_tables else 'text:'}{','.join(wanted)}",
        ("memory", "readme", "store", "supervisor"),  # the notes name episode journals' outcomes
        lambda: histories(cache, wanted, draws_tables),
    )
    return tables[kernel]


def _masked(records: dict[str, MemoryEntry], version: str | None) -> bool:
    entry = records.get(version) if version else None
    return bool(entry and entry.record is not None and entry.record.is_masked)


def _memory_entries(cache: WorkspaceCache, sources: _Sources) -> list[HistoryEntry]:
    """A workspace kernelscope has never seen: its memory records as the history."""
    if sources.from_memory:
        return sources.from_memory[0]
    records = sources.records
    entries: list[HistoryEntry] = []
    # the scores the cache keeps (the file lens's judgement reads them too): scored once
    for version_score in cache.scores():
        record = records[version_score.version].record
        action = (
            str(section_get(record.optimization, "action_description") or "") if record is not None else ""
        )
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


def _history(
    cache: WorkspaceCache, kernel: str | None, sources: _Sources, draws_tables: bool = True
) -> HistoryResult:
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
        entries = _memory_entries(cache, sources)
    title = f"**{kernel}**" if kernel else f"**{cache.root.name}**"
    # the count is the lens's (masked versions apart, counted as it counts them: masked.py);
    # their rows stay, marked, for a person
    heading = f"{title}: {runs_text(*run_counts(entries), 'experiment')}"
    markdown = history_markdown(heading, entries, sources.notes, draws_tables, sources.targets)

    return HistoryResult(
        workspace=str(cache.root),
        kernel=kernel,
        entries=entries,
        markdown=markdown,
        target=sources.target,
    )
