"""A fault of kernelscope's own harness is no verdict on the kernel (kernels/fault_origin.py): it
was the kernel's `exception` (FAIL, exit 3, "the kernel is wrong") with the traceback only in
`--json`. The fault is injected into the runner's child: a harness function replaced, before the
runner starts, by one that raises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.daemon.cli.bench import print_result
from kernelscope.protocol.bench import EXIT_GATE_FAILED, EXIT_SETUP, BenchResult, exit_status, judged_nothing
from tests.support.bench_fixtures import HEADER, KERNELS, REFERENCE, make_workspace

pytestmark = pytest.mark.slow

# The child: `target`'s attribute `name` raises, then the runner runs with the arguments given.
INJECT = """
import importlib, sys

def injected_fault(*args, **kwargs):
    raise ZeroDivisionError("injected harness fault")

if sys.argv[1]:
    target, name = sys.argv[1].rsplit(".", 1)
    module, _, cls = target.partition(":")
    owner = importlib.import_module(module)
    setattr(getattr(owner, cls) if cls else owner, name, injected_fault)
from kernelscope.kernels import runner
sys.exit(runner.main(sys.argv[2:]))
"""


def run_runner(ws: Path, fault: str) -> BenchResult:
    """The runner on `ws` (one configuration, one seed, the interpreter) with `fault` raising:
    `module.attribute` or `module:Class.method`, or "" for none."""
    output = ws / "result.json"
    argv = [
        "--workspace",
        str(ws),
        "--candidate",
        str(ws / "kernel.py"),
        "--mode",
        "interpreter",
        "--seeds",
        "1",
        "--config",
        "n=300",
        "--no-static-rules",
        "--output",
        str(output),
    ]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", INJECT, fault, *argv], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0 and output.is_file(), done.stderr[-3000:]
    return BenchResult.model_validate_json(output.read_text())


@pytest.mark.parametrize(
    "fault",
    [
        "kernelscope.kernels.timed_checks:TimedCallChecks.after",  # a timed check
        "kernelscope.kernels.input_changes.reference_first",  # the gate's inputs and reference run
        "kernelscope.kernels.runner._summarise",  # the result's summary, outside any configuration
    ],
)
def test_a_harness_fault_is_no_verdict_on_the_kernel(
    tmp_path: Path, fault: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_runner(make_workspace(tmp_path / "ws"), fault)
    assert result.error is not None and result.error.kind == "harness_error", result.error
    assert exit_status(result) == EXIT_SETUP and judged_nothing(result)  # iterate records nothing
    assert "injected harness fault" in result.error.message and "please report it" in result.error.message
    assert result.error.traceback and "injected_fault" in result.error.traceback  # the innermost frame
    print_result(result)
    said = capsys.readouterr()
    assert said.out.startswith("STOPPED (kernelscope's harness failed: no verdict on the kernel)"), said.out
    assert "please report it" in said.err
    assert "Traceback (most recent call last)" in said.err and ", in injected_fault\n" in said.err, said.err


DEEP_IN_TORCH = HEADER + "\ndef kernel_fn(x, y):\n    return add(x, y) @ y.reshape(3, -1)\n"
REFERENCE_RAISES = REFERENCE.replace("return x + y", "raise ValueError('the reference cannot')")


@pytest.mark.parametrize("case", ["raises", "deep_in_torch", "reference_raises"])
def test_the_problems_own_exception_stays_a_failed_gate(tmp_path: Path, case: str) -> None:
    """An exception with a frame of the kernel (or the reference) in it is theirs, wherever it
    was raised (in torch's C++ here): FAIL, exit 3."""
    ws = make_workspace(tmp_path / "ws", "raises" if case == "raises" else "good")
    if case == "deep_in_torch":
        (ws / "kernel.py").write_text(DEEP_IN_TORCH)
    if case == "reference_raises":
        (ws / "reference.py").write_text(REFERENCE_RAISES)
        (ws / "kernel.py").write_text(KERNELS["good"])
    result = run_runner(ws, "")
    assert result.error is not None and result.error.kind == "exception", result.error
    assert exit_status(result) == EXIT_GATE_FAILED and not judged_nothing(result)
    assert "please report" not in result.error.message


def test_a_problem_error_a_configuration_finds_is_a_setup_error(tmp_path: Path) -> None:
    """The adapter raises ProblemError where a configuration's inputs cannot be made: the
    workspace's fault (setup, no verdict), though no frame of its files is in the traceback."""
    from kernelscope.kernels.adapters.base import ProblemError
    from kernelscope.kernels.fault_origin import ProblemCode, error_of

    try:
        raise ProblemError("axis expression 'n +' cannot be evaluated")
    except ProblemError as exc:
        error = error_of(exc, ProblemCode(tmp_path, []), "n=300")
    assert error.kind == "setup", error


def test_a_verdict_on_one_configuration_heads_the_result(tmp_path: Path) -> None:
    """One configuration stopped with no verdict (a harness error, a cap), another judged
    wrong: the result is the judged one's (FAIL, exit 3), not a no-verdict hiding it."""
    from kernelscope.kernels.runner import _parse_args, _summarise
    from kernelscope.protocol.bench import BenchError, ConfigResult

    def failed(name: str, kind: str) -> ConfigResult:
        error = BenchError(kind=kind, message=f"{name}: m", config=name)  # type: ignore[arg-type]
        return ConfigResult(name=name, passed=False, error=error)

    args = _parse_args(["--workspace", str(tmp_path), "--candidate", "kernel.py"])
    common = {"workspace": ".", "candidate": "kernel.py", "baseline": "reference", "entry_point": "kernel_fn"}
    for first in ("out_of_memory", "setup"):
        outcomes = [(failed("a", first), None), (failed("b", "wrong_result"), None)]
        result = _summarise(outcomes, "interpreter", {}, common, 0.0, args)
        assert result.error is not None and result.error.kind == "wrong_result", first
        assert exit_status(result) == EXIT_GATE_FAILED
