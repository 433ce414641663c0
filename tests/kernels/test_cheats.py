"""Reward hacks against `kernelscope bench`, one candidate per known class (tests/support/cheat_kernels.py),
run as a user would under the CPU interpreter: each fails with its named kind, and in a
`--candidates` ranking none outranks the honest kernel; honest kernels of every contract
(native, KernelBench, SOL-ExecBench) still pass."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, FIXTURES
from tests.support.cheat_kernels import GELU_FRAMEWORK, GELU_HONEST, HONEST, VECTOR_ADD_CHEATS

KERNELBENCH = FIXTURES / "kernelbench"
pytestmark = pytest.mark.slow


def bench(*args: str, static: bool = False) -> dict:  # type: ignore[type-arg]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelscope.daemon.cli.main",
            "bench",
            *args,
            "--mode",
            "interpreter",
            "--json",
            # the runtime checks are under test here (the static ones: test_static_rules.py)
            *([] if static else ["--no-static-rules"]),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.stdout.strip(), proc.stderr[-2000:]
    return json.loads(proc.stdout)


def vector_add(tmp_path: Path, source: str, name: str = "ws") -> Path:
    ws = tmp_path / name
    shutil.copytree(EXAMPLES / "vector_add", ws)
    (ws / "kernel.py").write_text(source)
    return ws


def test_honest_vector_add_passes_with_launch_counts(tmp_path: Path) -> None:
    result = bench("-w", str(vector_add(tmp_path, HONEST)), "--seeds", "2")
    assert result["passed"] is True, result.get("error")
    assert result["comparable"] is False and result["verdict"] == "not comparable"
    assert result["noise_band"] and result["noise_band"][0] < 1.0 < result["noise_band"][1] * 1.5
    for config in result["configs"]:
        assert config["launches_per_call"] == 1 and config["timed_launches"] == [1, 1]
        assert config["timed_outputs_checked"] >= 2


@pytest.mark.parametrize("name", sorted(VECTOR_ADD_CHEATS))
def test_each_cheat_fails_with_its_kind(tmp_path: Path, name: str) -> None:
    source, kind, fragment = VECTOR_ADD_CHEATS[name]
    result = bench("-w", str(vector_add(tmp_path, source)), "--seeds", "2")
    assert result["passed"] is False, (name, result["configs"])
    error = result["error"]
    assert error["kind"] in ((kind,) if isinstance(kind, str) else kind), (name, error)
    assert fragment in error["message"], (name, error["message"])


def test_static_rules_stop_a_cheat_before_it_runs(tmp_path: Path) -> None:
    """By default a candidate that breaks an error rule fails as static_check, naming the rule
    and the line, and nothing of it runs; the honest kernel passes with the rules on."""
    from kernelscope.protocol.static_rules import check_source

    caught = {
        name
        for name, (source, _, _) in VECTOR_ADD_CHEATS.items()
        if any(f.severity == "error" for f in check_source(source, kind="native"))
    }
    assert len(caught) >= 5, caught
    for name in sorted(caught)[:3]:
        result = bench(
            "-w", str(vector_add(tmp_path, VECTOR_ADD_CHEATS[name][0], name)), "--seeds", "1", static=True
        )
        assert result["error"]["kind"] == "static_check", (name, result["error"])
        assert result["configs"] == [] and "kernel.py:" in result["error"]["message"]
    honest = bench("-w", str(vector_add(tmp_path, HONEST, "honest")), "--seeds", "1", static=True)
    assert honest["passed"] is True, honest.get("error")


def test_framework_baseline_opts_out_per_file(tmp_path: Path) -> None:
    source = "# kernelscope: framework-baseline\n" + VECTOR_ADD_CHEATS["framework_only"][0]
    result = bench("-w", str(vector_add(tmp_path, source)), "--seeds", "1")
    assert result["passed"] is True, result.get("error")
    assert any("framework baseline" in m for m in result["messages"])


def test_cheats_never_outrank_the_honest_kernel(tmp_path: Path) -> None:
    """One `--candidates` run: under the interpreter the ranking is by gate verdict only, so
    every cheat that is caught ranks below the honest kernel, and no timing decides."""
    ws = vector_add(tmp_path, HONEST)
    candidates = tmp_path / "candidates"
    candidates.mkdir()
    (candidates / "a_honest.py").write_text(HONEST)
    for name in ("framework_only", "pointer_cache", "patched_clock", "value_cache"):
        (candidates / f"b_{name}.py").write_text(VECTOR_ADD_CHEATS[name][0])
    report = bench("-w", str(ws), "--candidates", str(candidates), "--seeds", "1")
    ranking = report["ranking"]
    assert ranking[0]["candidate"].endswith("a_honest.py") and ranking[0]["passed"], ranking
    assert report["comparable"] is False and "not comparable" in " ".join(report["messages"])
    assert all(not r["passed"] for r in ranking[1:]), [
        (r["candidate"], r["result"]["error"]) for r in ranking
    ]


def kernelbench(tmp_path: Path, candidate: str) -> Path:
    ws = tmp_path / "gelu"
    ws.mkdir()
    shutil.copy(KERNELBENCH / "26_GELU_.py", ws / "26_GELU_.py")
    (ws / "kernel.py").write_text(candidate)
    return ws


def test_kernelbench_framework_model_new_is_no_kernel(tmp_path: Path) -> None:
    ws = kernelbench(tmp_path, GELU_FRAMEWORK)
    result = bench(
        "-w",
        str(ws),
        "--reference",
        "26_GELU_.py",
        "--problem-size",
        "batch_size=4",
        "--problem-size",
        "dim=1024",
    )
    assert result["passed"] is False and result["error"]["kind"] == "no_kernel", result.get("error")


def test_kernelbench_honest_model_new_passes(tmp_path: Path) -> None:
    ws = kernelbench(tmp_path, GELU_HONEST)
    result = bench(
        "-w",
        str(ws),
        "--reference",
        "26_GELU_.py",
        "--problem-size",
        "batch_size=4",
        "--problem-size",
        "dim=1024",
    )
    assert result["passed"] is True, result.get("error")
    assert result["configs"][0]["launches_per_call"] == 1
