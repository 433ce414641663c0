"""The README's stop conditions are judged once per refresh. The file lens (`file_lens`), its
tooltip (`stop_condition_lines`) and the kernel's hover (history_table) each judged every
condition on every version again, for the same memory and README: three passes of the one rule
(memory/stop_rule.py) where one gives every answer. One pass, kept by the workspace cache
(views/stop_judgements.py), is what all three are drawn from; their texts are unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope.daemon.engine.memory import stop_rule
from kernelscope.daemon.engine.views.history_table import history
from kernelscope.daemon.engine.views.lens_text import (
    file_lens,
    file_tooltip,
    stop_condition_lines,
    workspace_texts,
)
from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.protocol.commands import StopConditionStatus

README = (
    "# t\n\n## Stop Conditions\n- latency <= 10 us\n- memory-bound target: bandwidth >= 4.32TB/s\n"
    "- compute-bound target: TFLOPS >= 100T\n"
)


def gpu_record(version: str, latency_us: float, gbps: float) -> dict[str, object]:
    return {
        "version": version,
        "performance": {"latency_us": latency_us, "bandwidth_gbps": gbps, "tflops": 50.0},
        "quality_gate": {"result": "PASS"},
        "kernelscope": {"mode": "gpu"},
    }


def workspace(root: Path) -> Path:
    (root / "README.md").write_text(README)
    (root / "kernel.py").write_text("def kernel_fn(x):\n    return x\n")
    (root / "memory").mkdir()
    for item in (
        gpu_record("v0", 30.0, 2000.0),
        gpu_record("v1", 20.0, 4400.0),
        gpu_record("v2", 12.0, 4000.0),
    ):
        (root / "memory" / f"{item['version']}.json").write_text(json.dumps(item))
    return root


def test_one_refresh_judges_each_condition_on_each_version_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(tmp_path)
    lens, lines = file_lens(Workspace(root)), stop_condition_lines(Workspace(root))  # (uncached, as before)
    judged: list[str] = []

    def counted(**fields: object) -> StopConditionStatus:
        judged.append(str(fields["text"]))
        return StopConditionStatus(**fields)  # type: ignore[arg-type]

    # every answer of the one rule (condition_status) is a status it builds
    monkeypatch.setattr(stop_rule, "StopConditionStatus", counted)
    cache = WorkspaceCache(root)
    file_text, _ = workspace_texts(cache)
    tooltip = file_tooltip(cache)
    history(cache, None)  # the kernel's hover: the same lens and lines
    assert len(judged) == 3 * 3, judged  # 3 conditions, 3 versions: once each
    assert (file_text, tooltip) == (lens, "\n".join(lines))  # the texts are unchanged
    assert "latency <= 10 us: best 12 us v2, 83% of target" in lines[0], lines
