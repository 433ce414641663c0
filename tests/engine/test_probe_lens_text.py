"""The probe lens's headline word (engine/views/lens_text.py `probe_text`) is `kernelscope bench`'s:
a probe that could not be set up is no FAIL verdict on the kernel, nor one a resource cap stopped."""

from __future__ import annotations

import pytest

from kernelscope.daemon.engine.views.lens_text import probe_text
from kernelscope.protocol.bench import BenchResult
from tests.support.bench_fixtures import bench_result


@pytest.mark.parametrize(
    "probe,expected",
    [
        # `bench` says NOT RUN and STOPPED for these; the lens said FAIL (setup), FAIL (out_of_memory)
        (bench_result("setup"), "last probe: NOT RUN (setup) [interpreter]"),
        (bench_result("interpreter_limit"), "last probe: NOT RUN (interpreter_limit) [interpreter]"),
        (bench_result("out_of_memory"), "last probe: STOPPED (out_of_memory) [interpreter]"),
        (bench_result("resource_limit"), "last probe: STOPPED (resource_limit) [interpreter]"),
        (bench_result("unsupported", "unsupported"), "last probe: UNSUPPORTED [interpreter]"),
        (bench_result("wrong_result", "gate_failed"), "last probe: FAIL (wrong_result) [interpreter]"),
        (bench_result(None, "gate_failed"), "last probe: FAIL (gate) [interpreter]"),
        (bench_result(None, "ok", passed=True), "last probe: PASS [interpreter]"),
    ],
)
def test_the_probe_lens_says_bench_s_headline_word(probe: BenchResult, expected: str) -> None:
    assert probe_text(probe, stale=False) == expected
