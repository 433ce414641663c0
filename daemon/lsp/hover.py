"""Hover on a kernel's name: its experiments as a Markdown table."""

from __future__ import annotations

from typing import Any

from kernelscope.daemon.engine.lens_text import memory_scores
from kernelscope.daemon.engine.store import ExperimentStore, StoreError
from kernelscope.daemon.lsp.state import WorkspaceState
from kernelscope.protocol.lsp import HistoryEntry, HistoryResult

FAILED_STATUSES = ("failed", "timeout", "FAIL", "TIMEOUT_FAIL")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:80]


def history(state: WorkspaceState, kernel: str | None) -> HistoryResult:
    ws = state.workspace
    entries: list[HistoryEntry] = []
    records = {e.version: e for e in ws.memory.scan()}
    try:
        store = ExperimentStore(state.settings.db_url)
        filters: dict[str, Any] = {"kernel": kernel} if kernel else {}
        experiments = store.list_experiments(workspace=str(ws.root), **filters)
    except StoreError:
        experiments = []

    def masked(version: str | None) -> bool:
        entry = records.get(version) if version else None
        return bool(entry and entry.record is not None and entry.record.is_masked)

    for exp in experiments:
        entries.append(
            HistoryEntry(
                version=exp.memory_version,
                score=exp.score,
                status=exp.status,
                summary=exp.change_summary,
                experiment_id=exp.id,
                masked=masked(exp.memory_version),
                failed=exp.is_buggy or exp.status in FAILED_STATUSES,
            )
        )
    if not entries:  # a workspace kernelscope has never seen: its memory records
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
                    masked=masked(version_score.version),
                    failed=not version_score.passed and not version_score.label,
                )
            )
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
    from kernelscope.daemon.engine.lens_text import file_lens, recorded_notes

    notes = recorded_notes(ws.root, list(records.values()))
    if notes:
        lines += ["", "**Recorded by the agents** (newest first)", "", *notes]

    return HistoryResult(
        workspace=str(ws.root),
        kernel=kernel,
        entries=entries,
        markdown="\n".join(lines),
        target=file_lens(ws),
    )


def cached_history(state: WorkspaceState, kernel: str) -> HistoryResult:
    """`history` for hover on a kernel's name, computed once per change of the workspace (a
    store of 100,000 experiments takes ~20 ms to ask). A refresh drops the table; one being
    computed meanwhile lands in the dropped table, never in the new one."""
    table: dict[str, HistoryResult] = state.cache.setdefault("histories", {})
    found = table.get(kernel)
    if found is None:
        found = table[kernel] = history(state, kernel)
    return found
