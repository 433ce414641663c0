"""Problem lint in the benchmark (issue #25 item 1): before any candidate runs, the reference
is run on the problem's own inputs and what a trivial kernel would get away with is in the
result (with the problem file's line, the workspace's path, not the scratch copy's) and in its
messages. KernelBench 19_ReLU: the identity passes its inputs; level 2 80_Gemm_Max_Subtract_GELU:
its output is exactly zero, so a kernel that writes zeros passes the gate, and is flagged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kernels.test_kernelbench import RELU, RELU_KERNEL, bench, one_document, workspace

pytestmark = pytest.mark.slow
GEMM_MAX = "80_Gemm_Max_Subtract_GELU.py"
GEMM_MAX_SIZES = ["--problem-size", "batch_size=8", "--problem-size", "in_features=64"]
GEMM_MAX_SIZES += ["--problem-size", "out_features=64"]

ZEROS_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def _zeros(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(torch.nn.Module):
    def __init__(self, in_features, out_features, max_dim):
        super().__init__()
        self.gemm = torch.nn.Linear(in_features, out_features)

    def forward(self, x):
        out = torch.empty((x.shape[0], 1), device=x.device, dtype=x.dtype)
        _zeros[(triton.cdiv(out.numel(), 128),)](out, out.numel(), BLOCK=128)
        return out
"""


def test_relu_s_inputs_are_flagged_at_get_inputs(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "relu", RELU, RELU_KERNEL)
    run = bench("-w", str(ws), "--reference", RELU, "--problem-size", "batch_size=8", "--problem-size", "dim=64",
                "--mode", "interpreter", "--seeds", "1", "--json")  # fmt: skip
    result = one_document(run.stdout)
    assert result["passed"] is True, result.get("error")
    rules = {f["rule"]: f for f in result["problem_lint"]}
    assert {"identity-passes", "sign-invariant"} <= set(rules), result["problem_lint"]
    sign = rules["sign-invariant"]
    assert sign["file"] == str(ws / RELU) and sign["line"] == 26  # def get_inputs
    assert any(
        m.startswith("problem lint (sign-invariant)") and f"{RELU}:26" in m for m in result["messages"]
    )


def test_a_zero_writing_kernel_passes_gemm_max_and_is_flagged(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "gemm", GEMM_MAX, ZEROS_KERNEL)
    run = bench("-w", str(ws), "--reference", GEMM_MAX, *GEMM_MAX_SIZES, "--mode", "interpreter", "--seeds", "1",
                "--json")  # fmt: skip
    result = one_document(run.stdout)
    assert result["passed"] is True, result.get("error")  # the problem cannot tell: the lint must say it
    [finding] = [f for f in result["problem_lint"] if f["rule"] == "constant-output"]
    assert "zeros" in finding["message"] and finding["file"] == str(ws / GEMM_MAX)
