"""The table behind a "values already tried" inlay hint (its tooltip): each value used at the
spot, the versions that used it, how many passed and failed, the best score, and that best
version's score per configuration. Made once per history state: 250 of them are ~10 ms to
format, a whole-file answer for a client that takes tooltips with the hints."""

from __future__ import annotations

from typing import Any

from kernelscope.protocol.history import TriedHint


def tried_markdown(service: Any, tried: TriedHint) -> str:
    """`tried`'s table as Markdown, kept in the history state's memo (`service`: the
    workspace's HistoryService; a new history state starts an empty memo)."""
    memo = service.history(check=False).memo.setdefault("tried_tables", {})
    key = (tried.key, tried.label, tried.kernel, tried.value)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _table(tried)
    return str(found)


def _table(tried: TriedHint) -> str:
    rows = ["| value | versions | passed | failed | best |", "|---|---|---:|---:|---|"]
    for value in tried.values:
        best = value.best_score.text() if value.best_score else "-"
        here = " (here)" if value.current else ""
        versions = ", ".join(value.versions[:6])
        rows.append(f"| {value.value}{here} | {versions} | {value.passed} | {value.failed} | {best} |")
        for config, score in list(value.by_config.items())[:8]:
            rows.append(f"| ↳ {config} | | | | {score.text()} |")
    return f"**{tried.label}**\n\n" + "\n".join(rows)
