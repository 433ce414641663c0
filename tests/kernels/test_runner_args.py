"""The runner's own argument parsing refuses what its timer cannot use: it is run by other
launchers than `kernelscope bench`, whose options check the same rule."""

from __future__ import annotations

import pytest

from kernelscope.kernels.runner import _parse_args


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
