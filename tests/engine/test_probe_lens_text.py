"""The probe lens's headline word (engine/views/lens_text.py `probe_text`) is `kernelscope bench`'s:
a probe that could not be set up is no FAIL verdict on the kernel, nor one a resource cap stopped."""

from __future__ import annotations

import pytest

from kernelscope.daemon.engine.views.lens_text import probe_text
from kernelscope.protocol.bench import BenchError, BenchResult


def _probe(kind: str | None, status: str = "error", passed: bool = False) -> BenchResult:
    return BenchResult(
        status=status,  # type: ignore[arg-type]
        passed=passed,
        mode="interpreter",
        workspace="ws",
        candidate="kernel.py",
        baseline="reference",
        entry_point="",
        error=None if kind is None else BenchError(kind=kind, message="m"),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    "probe,expected",
    [
        # `bench` says NOT RUN and STOPPED for these; the lens said FAIL (setup), FAIL (out_of_memory)
        (_probe("setup"), "last probe: NOT RUN (setup) [interpreter]"),
        (_probe("interpreter_limit"), "last probe: NOT RUN (interpreter_limit) [interpreter]"),
        (_probe("out_of_memory"), "last probe: STOPPED (out_of_memory) [interpreter]"),
        (_probe("resource_limit"), "last probe: STOPPED (resource_limit) [interpreter]"),
        (_probe("unsupported", "unsupported"), "last probe: UNSUPPORTED [interpreter]"),
        (_probe("wrong_result", "gate_failed"), "last probe: FAIL (wrong_result) [interpreter]"),
        (_probe(None, "gate_failed"), "last probe: FAIL (gate) [interpreter]"),
        (_probe(None, "ok", passed=True), "last probe: PASS [interpreter]"),
    ],
)
def test_the_probe_lens_says_bench_s_headline_word(probe: BenchResult, expected: str) -> None:
    assert probe_text(probe, stale=False) == expected
