"""The probe lens's headline word (engine/views/lens_text.py `probe_text`) is `kernelscope bench`'s:
a probe that could not be set up is no FAIL verdict on the kernel, nor one a resource cap stopped."""

from __future__ import annotations

import pytest

from kernelscope.daemon.engine.views.diagnostics import probe_notices
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


@pytest.mark.parametrize(
    "kind,lead",
    [
        ("setup", "benchmark NOT RUN (setup error: no verdict on the kernel): m"),
        # (it said "setup error": the kernel ran, into the interpreter's known bf16 faults)
        ("interpreter_limit", "benchmark NOT RUN (an interpreter limit: no verdict on the kernel): m"),
        ("out_of_memory", "benchmark STOPPED (resource cap: no verdict on the answer): m"),
        ("resource_limit", "benchmark STOPPED (resource cap: no verdict on the answer): m"),
        ("worker", "benchmark STOPPED (the benchmark worker died: no verdict on the kernel): m"),
    ],
)
def test_the_probe_diagnostic_claims_no_failed_gate_for_a_run_not_judged(kind: str, lead: str) -> None:
    """The diagnostic under kernel.py said "benchmark gate failed: ..." for a probe that could
    not be set up or that a cap stopped, where the lens above it said NOT RUN or STOPPED."""
    [notice] = probe_notices(bench_result(kind))
    assert notice.message == lead and notice.code == kind
    assert notice.severity == "warning"


def test_the_probe_diagnostic_of_a_failed_gate_and_of_an_unsupported_run() -> None:
    [failed] = probe_notices(bench_result("wrong_result", "gate_failed"))
    assert (failed.severity, failed.message) == ("error", "benchmark gate failed: m")
    [unsupported] = probe_notices(bench_result("unsupported", "unsupported"))
    assert unsupported.message == "benchmark UNSUPPORTED: m" and unsupported.severity == "warning"
