"""An exception after the harness read the problem's files is the kernel's `exception` (FAIL,
exit 3), whatever its traceback holds; with no frame of the problem's files in it, its message
says kernelscope may be at fault and `bench` prints its last frames. Only one raised before
(the run's settings) is `harness_error`, no verdict (kernels/fault_origin.py). Faults are
injected into the runner's child: a harness function replaced, before the runner starts, by one
that raises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.daemon.cli.bench import print_result
from kernelscope.protocol.bench import (
    EXIT_GATE_FAILED,
    EXIT_SETUP,
    HARNESS_FAILED,
    HARNESS_MAY_BE_AT_FAULT,
    BenchResult,
    exit_status,
    judged_nothing,
)
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
        # a GPU's asynchronous fault (an illegal memory access) surfaces at the synchronize after
        # the kernel's call returned: no frame of the kernel is left on its traceback
        "kernelscope.kernels.runner._sync",
    ],
)
def test_a_fault_after_the_problem_was_read_is_the_kernels_exception(
    tmp_path: Path, fault: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The harness cannot tell its own fault from a kernel's that left no frame (a kernel's
    output it cannot read, a CUDA fault reported late): either way the kernel's FAIL, never a
    no verdict a kernel could bring about; the message asks for a report, with the frames."""
    result = run_runner(make_workspace(tmp_path / "ws"), fault)
    assert result.error is not None and result.error.kind == "exception", result.error
    assert exit_status(result) == EXIT_GATE_FAILED and not judged_nothing(result)
    assert (
        "injected harness fault" in result.error.message and HARNESS_MAY_BE_AT_FAULT in result.error.message
    )
    assert result.error.traceback and "injected_fault" in result.error.traceback  # the innermost frame
    print_result(result)
    said = capsys.readouterr()
    assert said.out.startswith("FAIL"), said.out
    assert "please report it" in said.err
    assert "Traceback (most recent call last)" in said.err and ", in injected_fault\n" in said.err, said.err


def test_a_fault_before_the_problem_was_read_is_no_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run's settings are read before any file of the problem: nothing a kernel does can
    reach them, so a fault there is kernelscope's own (harness_error, exit 2, nothing recorded)."""
    result = run_runner(make_workspace(tmp_path / "ws"), "kernelscope.kernels.runner._env")
    assert result.error is not None and result.error.kind == "harness_error", result.error
    assert exit_status(result) == EXIT_SETUP and judged_nothing(result)  # iterate records nothing
    assert "injected harness fault" in result.error.message and HARNESS_FAILED in result.error.message
    print_result(result)
    said = capsys.readouterr()
    assert said.out.startswith("STOPPED (kernelscope's harness failed"), said.out
    assert ", in injected_fault\n" in said.err, said.err


FAKE_FILE = "/usr/lib/python3/dist-packages/fake.py"
NO_FRAME_KERNELS = {
    # an output the harness cannot read (gate.digest copies it out): the kernel's wrong output
    "meta_output": HEADER + "\ndef kernel_fn(x, y):\n    return torch.empty_like(x, device='meta')\n",
    # an entry point that is no Python function of the workspace
    "partial": HEADER + "\nimport functools\nkernel_fn = functools.partial(torch.add, alpha='x')\n",
    # a function compiled under another file's name
    "fake_file": HEADER
    + "\n_g = {}\nexec(compile('def kernel_fn(x, y):\\n    raise ValueError(\"wrong\")\\n', "
    + repr(FAKE_FILE)
    + ", 'exec'), _g)\nkernel_fn = _g['kernel_fn']\n",
    # an exception that hides its traceback
    "hidden_traceback": HEADER
    + "\nclass E(Exception):\n    @property\n    def __traceback__(self):\n        return None\n"
    + "\ndef kernel_fn(x, y):\n    raise E('wrong')\n",
}


@pytest.mark.parametrize("case", sorted(NO_FRAME_KERNELS))
def test_a_kernel_whose_exception_has_no_frame_of_it_fails(tmp_path: Path, case: str) -> None:
    """Broken (or cheating) kernels whose exception carries no frame of the workspace: FAIL,
    exit 3, as before the traceback was read at all; the message only hints at the harness."""
    ws = make_workspace(tmp_path / "ws")
    (ws / "kernel.py").write_text(NO_FRAME_KERNELS[case])
    result = run_runner(ws, "")
    assert result.error is not None and result.error.kind == "exception", result.error
    assert exit_status(result) == EXIT_GATE_FAILED and not judged_nothing(result)
    assert HARNESS_MAY_BE_AT_FAULT in result.error.message, result.error.message


def test_a_pseudo_file_name_is_nobodys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`<string>` (a dataclass's generated __init__, exec'd code) is no file of the workspace,
    though the runner's cwd is the workspace and `realpath` would put it there."""
    from kernelscope.kernels.fault_origin import ProblemCode

    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile("def f():\n    raise ValueError('harness')\n", "<string>", "exec"), namespace)
    try:
        namespace["f"]()  # type: ignore[operator]
    except ValueError as exc:
        assert not ProblemCode(tmp_path, []).raised_in(exc)
    else:
        raise AssertionError("f did not raise")


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


def test_a_problem_error_a_configuration_raises_is_the_kernels_exception(tmp_path: Path) -> None:
    """ProblemError raised in a configuration (the candidate's outputs, its inputs) comes after
    the candidate's code ran, which can raise it: the run's exception, not a setup error."""
    from kernelscope.kernels.adapters.base import ProblemError
    from kernelscope.kernels.fault_origin import ProblemCode, error_of

    try:
        raise ProblemError("the candidate returned a dict without output(s) rstd")
    except ProblemError as exc:
        error = error_of(exc, ProblemCode(tmp_path, []), "n=300")
    assert error.kind == "exception", error


SOL_FORGETS_AN_OUTPUT = """
def run(input, weight, eps):
    num_rows, hidden_size = input.shape
    output = torch.empty_like(input)
    rstd = torch.empty(num_rows, dtype=torch.float32, device=input.device)
    _rmsnorm_rows[(num_rows,)](input, weight, output, rstd, hidden_size, eps, BLOCK=triton.next_power_of_2(hidden_size))
    return {"output": output}  # forgets rstd: the candidate's bug
"""
PASSING_GATE = (
    "import json\nprint('[test_kernel] RESULT_JSON=' + json.dumps({'total': 1, 'passed': 1, 'all_pass': True, "
    "'failures': [], 'latency_us_by_shape': {'num_rows=8192': 10.0}}))\n"
)


@pytest.mark.parametrize("gate", [False, True])
def test_a_sol_candidate_missing_an_output_fails(tmp_path: Path, gate: bool) -> None:
    """SOL-ExecBench's adapter says "returned a dict without output(s)" with ProblemError: the
    candidate's bug, FAIL (exit 3); as a setup error a workspace's passing gate command's
    verdict replaced it (PASS)."""
    import json

    from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
    from tests.support.sol_workspace import KERNELS as SOL_KERNELS
    from tests.support.sol_workspace import make_sol_workspace

    ws = make_sol_workspace(tmp_path / "sol")
    solution = json.loads((ws / "solution.json").read_text())
    solution["spec"]["destination_passing_style"] = False
    (ws / "solution.json").write_text(json.dumps(solution, indent=2))
    (ws / "kernel.py").write_text(SOL_KERNELS["triton"].split("def run(")[0] + SOL_FORGETS_AN_OUTPUT)
    (ws / "gate.py").write_text(PASSING_GATE)
    request = BenchRequest(
        workspace=ws,
        mode="interpreter",
        seeds=1,
        gate_command=f"{sys.executable} gate.py" if gate else None,
        extra_args=["--no-static-rules"],
    )
    result = run_benchmark(request)
    assert not result.passed and result.error is not None, result
    assert result.error.kind == "exception" and "without output(s) rstd" in result.error.message, result.error
    assert exit_status(result) == EXIT_GATE_FAILED


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


RAISES_PROBLEM_ERROR_ON_IMPORT = (
    HEADER
    + "\nimport importlib\n"
    + "raise importlib.import_module('kernelscope.kernels.adapters.base').ProblemError('no adapter')\n"
    + "\ndef kernel_fn(x, y):\n    return x * 0\n"
)
NATIVE_PASSING_GATE = (
    "import json\nprint('[test_kernel] RESULT_JSON=' + json.dumps({'total': 2, 'passed': 2, 'all_pass': True, "
    "'failures': [], 'latency_us_by_shape': {'n=300': 10.0, 'n=1000': 5.0}}))\n"
)


def test_a_problem_error_the_candidates_import_raises_is_the_kernels(tmp_path: Path) -> None:
    """A ProblemError raised while the candidate's module runs is the kernel's failed import
    (`compile`, FAIL), not setup: as setup, a workspace's passing, timed gate command's verdict
    replaced it (PASS for a kernel that returns zeros)."""
    from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark

    ws = make_workspace(tmp_path / "ws")
    (ws / "kernel.py").write_text(RAISES_PROBLEM_ERROR_ON_IMPORT)
    (ws / "gate.py").write_text(NATIVE_PASSING_GATE)
    request = BenchRequest(
        workspace=ws,
        mode="interpreter",
        seeds=1,
        gate_command=f"{sys.executable} gate.py",
        extra_args=["--no-static-rules"],
    )
    result = run_benchmark(request)
    assert not result.passed and result.error is not None, result
    assert result.error.kind == "compile" and "no adapter" in result.error.message, result.error
    assert exit_status(result) == EXIT_GATE_FAILED


def test_a_reference_the_adapter_cannot_read_stays_setup(tmp_path: Path) -> None:
    """The adapter's own ProblemError (a reference without the contract's functions) is still
    setup: no verdict on the kernel."""
    ws = make_workspace(tmp_path / "ws", reference="import torch\n")
    result = run_runner(ws, "")
    assert result.error is not None and result.error.kind == "setup", result.error
    assert exit_status(result) == EXIT_SETUP


def test_a_workspace_module_shadowing_the_harnesss_is_the_workspaces(tmp_path: Path) -> None:
    """The runner starts (`python -m`, as bench starts it) in the workspace, first on sys.path:
    a workspace `torch.py` runs before the harness reads the problem. Its exception has a frame
    of the workspace: FAIL (exit 3), not harness_error, the no verdict a workspace could choose."""
    ws = make_workspace(tmp_path / "ws")
    (ws / "torch.py").write_text("raise ValueError('a workspace torch.py')\n")
    output = tmp_path / "result.json"
    argv = ["--workspace", str(ws), "--candidate", str(ws / "kernel.py"), "--mode", "interpreter"]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "kernelscope.kernels.runner", *argv, "--output", str(output)],
        cwd=ws,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert output.is_file(), done.stderr[-3000:]
    result = BenchResult.model_validate_json(output.read_text())
    assert result.error is not None and result.error.kind == "exception", result.error
    assert "a workspace torch.py" in result.error.message
    assert exit_status(result) == EXIT_GATE_FAILED and not judged_nothing(result)


RAISES_A_CHECKS_FAILURE = (
    HEADER
    + "\nimport importlib\n"
    + "\ndef kernel_fn(x, y):\n"
    + "    owner = importlib.import_module('kernelscope.kernels.{module}')\n"
    + "    raise getattr(owner, '{cls}')('{kind}', 'no verdict, please')\n"
)


@pytest.mark.parametrize(
    ("module", "cls", "kind"),
    [
        ("gate", "GateFailure", "setup"),
        ("gate", "GateFailure", "unsupported"),
        ("timing", "TimedCheckFailure", "harness_error"),
        ("timing", "TimedCheckFailure", "interrupted"),
        ("gate", "GateFailure", "out_of_memory"),
    ],
)
def test_a_check_failure_the_kernel_raises_with_no_verdict_is_its_exception(
    tmp_path: Path, module: str, cls: str, kind: str
) -> None:
    """The gate's and timed checks' failures carry a verdict kind only: a kernel raising one
    (importlib reaches the classes) with a no-verdict or cap kind fails with `exception`."""
    ws = make_workspace(tmp_path / "ws")
    (ws / "kernel.py").write_text(RAISES_A_CHECKS_FAILURE.format(module=module, cls=cls, kind=kind))
    result = run_runner(ws, "")
    assert result.error is not None and result.error.kind == "exception", result.error
    assert "no verdict, please" in result.error.message
    assert exit_status(result) == EXIT_GATE_FAILED and not judged_nothing(result)


class _Declared(Exception):
    bench_kind = "unsupported"


def test_unsupported_is_taken_only_from_the_adapters_inputs(tmp_path: Path) -> None:
    """`bench_kind = "unsupported"` is any class's to carry: a kernel raising one is its
    `exception` (FAIL); only where the adapter's input building raised it, before the candidate
    was called for that configuration, is it the problem's declared `unsupported`."""
    from kernelscope.kernels.fault_origin import ProblemCode, error_of

    code = ProblemCode(tmp_path, [])
    assert error_of(_Declared("a kernel's"), code, "n=300").kind == "exception"
    assert error_of(_Declared("the adapter's"), code, "n=300", declared=True).kind == "unsupported"
    ws = make_workspace(tmp_path / "ws")
    kernel = (
        HEADER
        + "\nclass E(Exception):\n    bench_kind = 'unsupported'\n\ndef kernel_fn(x, y):\n    raise E('no')\n"
    )
    (ws / "kernel.py").write_text(kernel)
    result = run_runner(ws, "")
    assert result.error is not None and result.error.kind == "exception", result.error
    assert exit_status(result) == EXIT_GATE_FAILED and not judged_nothing(result)
