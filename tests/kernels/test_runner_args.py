"""The runner's own argument parsing refuses what its timer cannot use: it is run by other
launchers than `kernelscope bench`, whose options check the same rule."""

from __future__ import annotations

import pytest

from kernelscope.kernels.runner import _parse_args, _summarise


@pytest.mark.parametrize("flag", ["--warmup-ms", "--rep-ms"])
@pytest.mark.parametrize("value", ["inf", "1e308", "nan", "-1"])
def test_a_timing_budget_the_timer_cannot_use_is_refused(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--warmup-ms inf` reached `int(self.warmup_ms / estimate)` in kernels/timing.py:
    OverflowError on the GPU, classified `exception` (a FAIL blamed on the kernel)."""
    with pytest.raises(SystemExit) as exited:
        _parse_args(["--workspace", ".", "--candidate", "kernel.py", flag, value])
    assert exited.value.code == 2 and flag in capsys.readouterr().err


def test_a_usual_timing_budget_is_read() -> None:
    args = _parse_args(
        ["--workspace", ".", "--candidate", "kernel.py", "--warmup-ms", "5", "--rep-ms", "60000"]
    )
    assert (args.warmup_ms, args.rep_ms) == (5.0, 60000.0)


def _messages(mode: str, *flags: str) -> list[str]:
    args = _parse_args(["--workspace", ".", "--candidate", "kernel.py", *flags])
    common = {"workspace": ".", "candidate": "kernel.py", "baseline": "reference", "entry_point": "kernel_fn"}
    return list(_summarise([], mode, {}, common, 0.0, args).messages)  # type: ignore[arg-type]


def test_a_cuda_graph_run_says_it_was_one() -> None:
    """A `--cuda-graph` result said nothing of it on a GPU (only the interpreter's said it was not
    used), though its times leave out the launch overhead and it has no kernel-only times."""
    graphed = [m for m in _messages("gpu", "--cuda-graph") if "--cuda-graph" in m]
    assert len(graphed) == 1 and graphed[0].startswith(
        "--cuda-graph: each timed call was a CUDA graph's replay"
    )
    assert not any("--cuda-graph" in m for m in _messages("gpu"))
    (unused,) = [m for m in _messages("interpreter", "--cuda-graph") if "--cuda-graph" in m]
    assert unused.startswith("--cuda-graph was not used: the CPU interpreter has no CUDA graphs")
