"""A native Atrex-Bench workspace (atrex-kernel-agent v0.3) benchmarked as atrex runs it: by its
own `test_kernel.py --no-memory` by default, in a scratch copy that brings the gitignored
`atrex-bench/` runtime the adapter calls, its `sid=<id>: <stage> <reason>` failures read onto the
shapes of `shapes.json`, and a generalized workspace (private shapes) refused up front.

The workspace and its evaluator are stand-ins with upstream's layout and output contract
(tests/support/atrex_bench_workspace.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelscope.protocol import kinds
from tests.kernels.test_gate_command import kernelscope_bench
from tests.support.atrex_bench_workspace import make_atrex_bench_workspace

OWN_GATE = "python test_kernel.py --no-memory"


@pytest.mark.slow
def test_the_default_gate_is_the_workspaces_own_evaluator(tmp_path: Path) -> None:
    ws = make_atrex_bench_workspace(tmp_path)
    shutil.rmtree(ws / ".git")  # a plain folder: the copy holds everything, atrex-bench/ too
    code, result = kernelscope_bench(ws, "--json")
    assert code == 0 and result["status"] == "ok" and result["passed"], result
    assert result["messages"][0] == f"gate command passed: {OWN_GATE}"
    assert result["gate"]["source"] == "test_kernel" and result["gate"]["all_pass"] is True
    # what the evaluator calls and compares against, not kernelscope's harness defaults
    assert result["entry_point"] == "Model" and result["baseline"] == "metadata.json"
    assert not any("CONFIGS" in m or "harness could not run" in m for m in result["messages"])


def test_the_kinds_own_gate_is_in_the_registry() -> None:
    own = kinds.ATREX_BENCH.own_gate
    assert own is not None and own.command == OWN_GATE and own.script == "test_kernel.py"
    assert all(spec.own_gate is None for spec in kinds.kinds() if spec is not kinds.ATREX_BENCH)


@pytest.mark.slow
def test_without_its_evaluator_it_says_so_and_runs_nothing(tmp_path: Path) -> None:
    ws = make_atrex_bench_workspace(tmp_path)
    (ws / "test_kernel.py").unlink()
    code, result = kernelscope_bench(ws, "--json")
    assert code == 2 and result["error"]["kind"] == "setup", result
    assert "test_kernel.py, which it lacks" in result["error"]["message"]
    assert "CONFIGS" not in result["error"]["message"]
