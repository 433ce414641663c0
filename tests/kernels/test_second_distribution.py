"""The second input distribution (issue #25 item 2): after a candidate passes on the problem's
own inputs it runs once more on signed heavy-tailed ones of the same shapes; a kernel right
only on the problem's distribution fails as `wrong_off_distribution`. KernelBench's
`19_ReLU` (inputs from `torch.rand`, never negative) is the case in point: the identity
passes its own inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from kernelscope.kernels.second_inputs import OPT_OUT, check_second_distribution, signed_heavy_tailed
from kernelscope.kernels.timed_checks import declared_note
from tests.conftest import EXAMPLES
from tests.kernels.test_kernelbench import (
    _ELEMENTWISE,
    GELU,
    GELU_KERNEL,
    RELU,
    RELU_KERNEL,
    bench,
    one_document,
    workspace,
)

SMALL = ["--problem-size", "batch_size=8", "--problem-size", "dim=512"]
IDENTITY_KERNEL = _ELEMENTWISE.replace("{body}", "x")  # launches Triton, returns its input


def run_kernelbench(ws: Path, problem: str) -> dict:  # type: ignore[type-arg]
    done = bench(
        "-w", str(ws), "--reference", problem, *SMALL, "--mode", "interpreter", "--seeds", "1", "--json"
    )
    return one_document(done.stdout)


def test_the_draw_is_signed_heavy_tailed_at_the_original_scale() -> None:
    x = torch.rand(200_000) * 3  # one-signed, like 19_ReLU's
    n = torch.arange(10)
    (drawn, m, half), count = signed_heavy_tailed((x, n, torch.rand(64, 2).half().t()))
    assert count == 2 and m is n  # integers untouched
    assert drawn.shape == x.shape and drawn.dtype == x.dtype
    assert (drawn < 0).float().mean() > 0.4 and (drawn > 0).float().mean() > 0.4
    scale = float(x.pow(2).mean().sqrt())
    kurtosis = float(((drawn / drawn.std()) ** 4).mean())
    assert kurtosis > 4.0  # a normal draw has 3
    assert 0.5 * scale < float(drawn.pow(2).mean().sqrt()) < 3 * scale
    assert half.dtype == torch.float16 and half.stride() == (1, 2)  # layout kept
    again, _ = signed_heavy_tailed((x,))
    assert torch.equal(again[0], drawn)  # deterministic


@pytest.mark.slow
def test_identity_passes_relu_s_own_inputs_but_not_the_second_draw(tmp_path: Path) -> None:
    result = run_kernelbench(workspace(tmp_path / "relu", RELU, IDENTITY_KERNEL), RELU)
    [config] = result["configs"]
    assert result["passed"] is False and config["error"]["kind"] == "wrong_off_distribution", config
    assert (
        "right on the problem's own inputs, wrong on signed heavy-tailed ones" in config["error"]["message"]
    )
    honest = run_kernelbench(workspace(tmp_path / "honest", RELU, RELU_KERNEL), RELU)
    assert honest["passed"] is True, honest.get("error")
    assert honest["configs"][0]["second_distribution"].startswith("passed")
    gelu = run_kernelbench(workspace(tmp_path / "gelu", GELU, GELU_KERNEL), GELU)
    assert gelu["passed"] is True and gelu["configs"][0]["second_distribution"].startswith("passed")


@pytest.mark.slow
def test_a_problem_opts_out(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "relu", RELU, IDENTITY_KERNEL)
    problem = ws / RELU
    problem.write_text(problem.read_text() + f"\n{OPT_OUT} = False  # its domain is [0, 1)\n")
    result = run_kernelbench(ws, RELU)
    assert result["passed"] is True, result.get("error")
    assert result["configs"][0]["second_distribution"] == f"off: the problem sets {OPT_OUT} = False"
    # its declared domain excludes the timed calls' perturbed inputs too
    assert result["configs"][0]["notes"] == [declared_note(f"the problem sets {OPT_OUT} = False")]


LOG_REFERENCE = """import torch

CPU_CONFIGS = [{"name": "n=4096", "n": 4096}]
CONFIGS = CPU_CONFIGS


def make_inputs(config, seed, device):
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand(config["n"], generator=generator).add_(0.5).to(device),)


def reference(x):
    return torch.log(x)
"""

LOG_KERNEL = """import torch
import triton
import triton.language as tl


@triton.jit
def _log(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.log(tl.load(x_ptr + offs, mask=mask, other=1.0)), mask=mask)


def kernel_fn(x):
    out = torch.empty_like(x)
    _log[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
"""


@pytest.mark.slow
def test_a_domain_that_excludes_the_draw_skips_it(tmp_path: Path) -> None:
    ws = tmp_path / "log"
    ws.mkdir()
    (ws / "reference.py").write_text(LOG_REFERENCE)
    (ws / "kernel.py").write_text(LOG_KERNEL)
    done = bench("-w", str(ws), "--mode", "interpreter", "--seeds", "1", "--json")
    result = one_document(done.stdout)
    assert result["passed"] is True, result.get("error")
    assert result["configs"][0]["second_distribution"].startswith("skipped: the reference is not finite")


@pytest.mark.slow
@pytest.mark.parametrize("example", ["vector_add", "softmax", "layernorm", "matmul"])
def test_honest_examples_pass_the_second_draw(tmp_path: Path, example: str) -> None:
    ws = tmp_path / example
    shutil.copytree(EXAMPLES / example, ws)
    done = bench("-w", str(ws), "--mode", "interpreter", "--seeds", "1", "--json")
    result = json.loads(done.stdout)
    assert result["passed"] is True, (result.get("error"), done.stderr[-2000:])
    assert all(c["second_distribution"].startswith("passed") for c in result["configs"]), result["configs"]


class _ProbabilityProblem:
    """A problem whose reference raises outside its domain, as F.binary_cross_entropy does on
    values outside [0, 1]."""

    layout_checked = True

    def second_distribution_off(self) -> None:
        return None

    def make_inputs(self, config: dict, seed: int, device: str) -> tuple:  # type: ignore[type-arg]
        return (torch.rand(64, generator=torch.Generator().manual_seed(seed)).clamp(0.01, 0.99),)

    def reference(self, config: dict, inputs: tuple) -> torch.Tensor:  # type: ignore[type-arg]
        (p,) = inputs
        return torch.nn.functional.binary_cross_entropy(p, torch.full_like(p, 0.5), reduction="none")


def test_a_reference_that_raises_on_the_draw_skips_it() -> None:
    def candidate(p: torch.Tensor) -> torch.Tensor:
        raise AssertionError("never called: the reference decides first")

    found = check_second_distribution(_ProbabilityProblem(), {}, candidate, None, None, "cpu", lambda: None)
    assert found.startswith("skipped: the reference raised on signed heavy-tailed inputs"), found
    assert "RuntimeError" in found
