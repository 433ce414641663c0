"""A native Atrex-Bench workspace (atrex-kernel-agent v0.3) benchmarked as atrex runs it: by its
own `test_kernel.py --no-memory` by default, in a scratch copy that brings the gitignored
`atrex-bench/` runtime the adapter calls, its `sid=<id>: <stage> <reason>` failures read onto the
shapes of `shapes.json`, and a generalized workspace (private shapes) refused up front.

The workspace and its evaluator are stand-ins with upstream's layout and output contract
(tests/support/atrex_bench_workspace.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kernelscope.daemon.engine.run.gate_output import configs_from_report, report_from
from kernelscope.daemon.engine.run.scratch import scratch_copy, workspace_files
from kernelscope.protocol import kinds
from tests.kernels.test_gate_command import git_status, kernelscope_bench, tree_digest
from tests.support.atrex_bench_workspace import SHAPES, WRONG_KERNEL, make_atrex_bench_workspace

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


@pytest.mark.slow
def test_a_git_workspace_runs_with_its_ignored_runtime_and_stays_unchanged(tmp_path: Path) -> None:
    ws = make_atrex_bench_workspace(tmp_path)
    cache = ws / "atrex-bench" / "src" / "atrex_bench" / "__pycache__"
    cache.mkdir()
    (cache / "stale.cpython-311.pyc").write_bytes(b"\x00")
    before, status = tree_digest(ws), git_status(ws)
    assert status == ""  # atrex-bench/ is ignored, as atrex's .gitignore says

    code, result = kernelscope_bench(ws, "--json")
    assert code == 0 and result["passed"], result
    assert tree_digest(ws) == before and git_status(ws) == status

    runtime = kinds.ATREX_BENCH.own_gate.runtime  # type: ignore[union-attr]
    assert not any(n.startswith("atrex-bench/") for n in workspace_files(ws))
    assert {"atrex-bench/scripts/run_eval.py", "atrex-bench/src/atrex_bench"} <= set(
        workspace_files(ws, runtime)
    )
    with scratch_copy(ws, ignored=runtime) as scratch:
        copied = {p.relative_to(scratch.root).as_posix() for p in scratch.root.rglob("*") if p.is_file()}
    assert "atrex-bench/scripts/run_eval.py" in copied
    assert "atrex-bench/src/atrex_bench/__init__.py" in copied
    # only what the evaluator needs: no checkout data, no caches
    assert not any("data/" in n or "__pycache__" in n for n in copied)


@pytest.mark.slow
def test_a_generalized_workspace_is_refused_up_front(tmp_path: Path) -> None:
    ws = make_atrex_bench_workspace(tmp_path, generalized=True)
    before = tree_digest(ws)
    code, result = kernelscope_bench(ws, "--json")
    assert code == 2 and result["error"]["kind"] == "setup", result
    message = result["error"]["message"]
    assert "generalized" in message and "private" in message and "--gate-command" in message
    assert "Traceback" not in message and "nothing was run" in message
    code, ran = kernelscope_bench(ws, "--gate-command", OWN_GATE, "--json")  # named: it runs
    assert code == 3 and ran["status"] == "gate_failed" and "shapes.json" in ran["error"]["stderr_tail"]
    assert tree_digest(ws) == before


@pytest.mark.slow
def test_failures_fail_the_shapes_configs(tmp_path: Path) -> None:
    ws = make_atrex_bench_workspace(tmp_path, kernel=WRONG_KERNEL)
    before = tree_digest(ws)
    code, result = kernelscope_bench(ws, "--json")
    assert code == 3 and result["status"] == "gate_failed", result
    configs = result["configs"]
    assert [c["name"] for c in configs] == list(SHAPES)  # one per shape, not a second one
    for config, shape in zip(configs, SHAPES.values(), strict=True):
        assert not config["passed"] and config["error"]["kind"] == "wrong_result"
        assert config["params"] == shape["input_kwargs"]
    assert result["gate"]["total"] == 3
    assert "test_kernel.py failed 3 of 3 workloads: sid=0: correctness mismatch" in result["error"]["message"]
    assert result["comparable"] is False  # an interpreter run
    assert tree_digest(ws) == before


@pytest.mark.slow
def test_a_passing_interpreter_run_is_named_and_not_comparable(tmp_path: Path) -> None:
    ws = make_atrex_bench_workspace(tmp_path)
    code, result = kernelscope_bench(ws, "--json")
    assert code == 0, result
    assert [(c["name"], c["params"], c["passed"]) for c in result["configs"]] == [
        (sid, shape["input_kwargs"], True) for sid, shape in SHAPES.items()
    ]
    assert result["mode"] == "interpreter" and result["comparable"] is False
    assert result["verdict"] == "not comparable" and result["gate"]["total"] == 3


def test_shape_failures_map_onto_the_measured_shapes(tmp_path: Path) -> None:
    (tmp_path / "shapes.json").write_text(
        '{"0": {"init_kwargs": {}, "input_kwargs": {"n": 1}}, "1": {"init_kwargs": {}, "input_kwargs": {"n": 8}}}'
    )
    data = {
        "all_pass": False,
        "latency_us_by_shape": {"0": 10.0, "1": 12.0},
        "failures": [
            "sid=1: compile did not pass",
            "sid=1: correctness mismatch",
            "sid=0: performance timeout after 120s",
            "evaluation: run_eval crashed",
            "compile: triton.CompilationError in _l2_norm_kernel",
        ],
    }
    configs = configs_from_report(report_from("gate", "test_kernel", data, 1), tmp_path)
    by_name = {c.name: c for c in configs}
    assert list(by_name) == ["0", "1", "evaluation", "compile"]
    assert by_name["compile"].error is not None and by_name["compile"].error.kind == "compile"
    assert by_name["0"].error is not None and by_name["0"].error.kind == "timeout"
    assert by_name["1"].error is not None and by_name["1"].error.kind == "compile"
    assert by_name["1"].error.message == "sid=1: compile did not pass; sid=1: correctness mismatch"
    assert by_name["1"].params == {"n": 8} and by_name["1"].candidate_ms is None
    assert by_name["evaluation"].error is not None and by_name["evaluation"].error.kind == "gate_command"


def test_a_stage_the_evaluator_gave_no_result_for_is_not_a_wrong_result(tmp_path: Path) -> None:
    """`sid=N: correctness missing` (run_eval.py died before it compared anything: a Python
    without torch, say) is no verdict on the kernel: the gate's own failure, not wrong_result."""
    (tmp_path / "shapes.json").write_text('{"0": {"init_kwargs": {}, "input_kwargs": {"n": 1}}}')
    data = {
        "all_pass": False,
        "failures": ["sid=0: correctness missing", "sid=0: performance has no valid samples"],
    }
    (config,) = configs_from_report(report_from("gate", "test_kernel", data, 1), tmp_path)
    assert config.error is not None and config.error.kind == "gate_command"


@pytest.mark.slow
def test_a_candidate_from_elsewhere_is_what_the_gate_judges(tmp_path: Path) -> None:
    """`bench --candidate FILE` on a kind measured by its own evaluator: test_kernel.py reads
    kernel.py whatever it is asked, so the workspace's (right) kernel was judged in the wrong
    candidate's stead and the wrong one passed. The candidate takes kernel.py's place in the
    gate's copy; the workspace is unchanged."""
    ws = make_atrex_bench_workspace(tmp_path)
    wrong = tmp_path / "candidate.py"
    wrong.write_text(WRONG_KERNEL)
    before = tree_digest(ws)
    code, result = kernelscope_bench(ws, "--candidate", str(wrong), "--json")
    assert code == 3 and result["status"] == "gate_failed", result
    assert result["candidate"] == str(wrong)
    assert tree_digest(ws) == before


@pytest.mark.slow
def test_a_probe_names_no_version_the_evaluator_did_not_compare_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe hands the best passing version as the baseline, but Atrex-Bench's evaluator
    compares with its own (metadata.json's production latency): the lens said "0.72x vs v0"
    for a figure that is not against v0. The result names no baseline version then."""
    import subprocess
    import sys

    from kernelscope.daemon.engine.workflows.probe import ProbeOptions, run_probe
    from tests.conftest import write_record

    ws = make_atrex_bench_workspace(tmp_path)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True).stdout.strip()
    write_record(
        ws,
        0,
        correctness={"status": "PASS"},
        quality_gate={"result": "PASS"},
        performance={"latency_us": 10.0},
        git_commit_hash=head,
    )
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    result = run_probe(ws, ProbeOptions(mode="interpreter", seeds=1))
    assert result.passed and result.baseline == "metadata.json", result
    assert result.baseline_version is None
