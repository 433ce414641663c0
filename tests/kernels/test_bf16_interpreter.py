"""bfloat16 under the CPU interpreter, checked where it can be (issue #25 item 5), on a real
SOL-ExecBench problem: upstream's own Triton RMSNorm example (tests/fixtures/sol-execbench,
bf16 in and out, 14 workloads), whose kernel loads bf16, computes in fp32 and stores. The
Triton 3.9 interpreter gets that right; it gets bf16 arithmetic wrong, so the same kernel
computing in bf16 fails as `interpreter_limit`, naming the operation, never as a wrong
answer; a kernel that is really wrong stays wrong."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelscope.kernels.interpreter_limits import bf16_faults, config_problems
from tests.conftest import FIXTURES
from tests.kernels.test_sol_execbench import bench_cli

RMSNORM = FIXTURES / "sol-execbench" / "rmsnorm"
UPSTREAM_KERNEL = (RMSNORM / "kernel.py").read_text()
BF16_ARITHMETIC = UPSTREAM_KERNEL.replace("x_fp32 = x.to(tl.float32)", "x_fp32 = x").replace(
    "weight_fp32 = weight.to(tl.float32)", "weight_fp32 = weight"
)
FORGETS_WEIGHT = UPSTREAM_KERNEL.replace("output_fp32 = x_normed * weight_fp32", "output_fp32 = x_normed")


def sol_workspace(root: Path, kernel: str | None = None) -> Path:
    """The upstream example laid out as atrex's sol_seed.py lays a workspace out."""
    shutil.copytree(RMSNORM, root)
    (root / "solution_triton.json").rename(root / "solution.json")
    if kernel is not None:
        (root / "kernel.py").write_text(kernel)
    return root


def test_the_variants_differ_where_meant() -> None:
    assert BF16_ARITHMETIC != UPSTREAM_KERNEL and FORGETS_WEIGHT != UPSTREAM_KERNEL


def test_the_source_analysis(tmp_path: Path) -> None:
    upstream = bf16_faults(RMSNORM / "kernel.py")
    assert upstream[0] == [] and upstream[1] and "casts to x.dtype" in upstream[1][0]
    path = tmp_path / "kernel.py"
    path.write_text(BF16_ARITHMETIC)
    arithmetic, _ = bf16_faults(path)
    assert arithmetic[0].startswith("line 24: computes `x_fp32 * x_fp32`")
    assert any("reduces" in a and "tl.sum" in a for a in arithmetic)
    assert config_problems([{"name": "a", "dtypes": "bfloat16,bfloat16"}]) == []
    assert config_problems([{"name": "b", "dtype": "float8_e4m3fn"}])  # no fp8 at all


@pytest.mark.slow
def test_upstream_solution_passes_every_bf16_workload(tmp_path: Path) -> None:
    code, result, stderr = bench_cli(sol_workspace(tmp_path / "ws"), "--seeds", "1")
    assert code == 0 and result["passed"], (result.get("error"), stderr[-2000:])
    assert len(result["configs"]) == 14
    assert all(
        c["upstream"]["passed"] and c["upstream"]["required_matched_ratio"] == 0.99 for c in result["configs"]
    )


@pytest.mark.slow
def test_bf16_arithmetic_is_an_interpreter_limit_not_a_wrong_answer(tmp_path: Path) -> None:
    code, result, _ = bench_cli(sol_workspace(tmp_path / "ws", BF16_ARITHMETIC), "--seeds", "1")
    assert code == 2 and result["status"] == "unsupported" and not result["passed"]
    for config in result["configs"]:
        assert config["error"]["kind"] == "interpreter_limit", config["error"]
        assert "line 24: computes `x_fp32 * x_fp32`" in config["error"]["message"]
        assert "check it on a GPU" in config["error"]["message"]


@pytest.mark.slow
def test_a_wrong_bf16_kernel_stays_wrong(tmp_path: Path) -> None:
    code, result, _ = bench_cli(sol_workspace(tmp_path / "ws", FORGETS_WEIGHT), "--seeds", "1")
    assert code == 3 and result["status"] == "gate_failed"
    failed = [c for c in result["configs"] if not c["passed"]]
    assert failed and all(c["error"]["kind"] == "wrong_result" for c in failed)
    assert "at most one bfloat16 step" in failed[0]["error"]["message"]
