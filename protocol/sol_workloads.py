"""A SOL-ExecBench workspace's `workload.jsonl`: the one rule for what its lines are, torch-free,
so that the benchmark child (the adapter, which runs one configuration per workload) and the
daemon (the profile's workload count, the trace export's workload names, the gate's names for
configurations) read the same workloads, in the same order, with the same names.

Upstream's format (NVIDIA/SOL-ExecBench `docs/workload.md`): one JSON object per line with
`uuid`, `axes` (var axis -> value), `inputs` and an optional `tolerance`. Blank lines are
skipped; any other line that is not such an object (or whose `uuid` is not a non-empty string)
makes the file unreadable (upstream's evaluator refuses it too). A line without a `uuid` is named
`line<N>`, N its line number in the file (upstream requires one; kernelscope's harness has always
named it so), and one without `axes` has none.

Each process reads the file its own way (the daemon through `workspace_files`, size-capped; the
child plainly) and hands the text here.
"""

from __future__ import annotations

import json
from typing import Any

WORKLOADS = "workload.jsonl"


class WorkloadsError(ValueError):
    """workload.jsonl has a line that is not a workload object; the message names the line."""


def parse_workloads(text: str) -> list[dict[str, Any]]:
    """The file's workloads, in order, each with a `uuid` and an `axes` object; raises
    WorkloadsError naming the first line that is not one. An empty list for a file without
    one (the adapter refuses that; the daemon counts 0)."""
    workloads = []
    # (lines end at "\n" only, as upstream's reader iterates a file: a U+2028 inside a JSON string
    # is part of its line, where str.splitlines would cut it)
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            workload = json.loads(line)
        except (ValueError, RecursionError) as exc:  # not JSON; nested too deep, too long a number
            raise WorkloadsError(f"{WORKLOADS} line {number} is not valid JSON: {exc}") from None
        if not isinstance(workload, dict) or not isinstance(workload.get("axes", {}), dict):
            raise WorkloadsError(f"{WORKLOADS} line {number} is not a workload object with axes")
        uuid = workload.get("uuid", "line")
        if not isinstance(uuid, str) or not uuid.strip():  # upstream's uuid is a NonEmptyString
            raise WorkloadsError(f"{WORKLOADS} line {number} has a uuid that is not a non-empty string")
        workload.setdefault("uuid", f"line{number}")
        workload.setdefault("axes", {})
        workloads.append(workload)
    return workloads
