"""The harness's own libraries (torch, triton) missing from the interpreter a benchmark runs
with: the run is a setup error (NOT RUN, exit 2) naming the library and how to install it,
never a verdict on the kernel (kernels/harness_imports.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
from kernelscope.protocol.bench import EXIT_SETUP, exit_status, verdict_word
from tests.support.bench_fixtures import make_workspace

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("library", ["torch", "triton"])
def test_a_runner_without_torch_or_triton_is_a_setup_error(tmp_path: Path, library: str) -> None:
    """The reviewer's run with no torch in the runner's environment said `FAIL [exception]`,
    exit 3 (a ModuleNotFoundError in the runner's traceback); without triton the candidate's
    own `import triton` failed, a `compile` FAIL. A package of that name that raises what a
    missing one raises, first on the runner's path, stands in for the uninstalled library."""
    hidden = tmp_path / "hidden" / library
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text(
        f"raise ModuleNotFoundError(\"No module named '{library}'\", name={library!r})\n"
    )
    ws = make_workspace(tmp_path / "ws")
    result = run_benchmark(
        BenchRequest(workspace=ws, mode="interpreter", seeds=1, env={"PYTHONPATH": str(hidden.parent)})
    )
    assert result.error is not None and result.error.kind == "setup", result.error
    assert exit_status(result) == EXIT_SETUP and verdict_word(result) == "NOT RUN"
    message = result.error.message
    assert f"cannot import {library} (No module named '{library}')" in message, message
    assert "torch==2.13.0+cpu" in message and "KERNELSCOPE_BENCH_PYTHON" in message, message
    assert result.mode == "interpreter"
