"""Which error kinds are a verdict on the kernel is decided once (protocol/bench.py): what
`kernelscope bench` exits with and what the trace store records follow the same rule."""

from __future__ import annotations

from typing import get_args

import pytest

from kernelscope.daemon.engine.store.traces import traces_from_bench
from kernelscope.protocol.bench import (
    EXIT_GATE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_SETUP,
    ErrorKind,
    exit_status,
    verdict_word,
    worst_exit_status,
)
from tests.support.bench_fixtures import bench_result


def test_a_dead_benchmark_worker_is_no_failed_gate() -> None:
    """A warm worker died mid-job and the job's cold re-run was cancelled (a kernel that
    crashes its own child or kills its parent is `crash`): the store recorded no trace for it, but
    `bench` exited 3 and said FAIL, a verdict on a kernel nothing judged."""
    result = bench_result("worker")
    assert exit_status(result) == EXIT_SETUP
    assert verdict_word(result) != "FAIL"
    assert exit_status(bench_result("crash")) == EXIT_GATE_FAILED


def test_an_interrupted_run_exits_as_a_ctrl_c_does() -> None:
    """A Ctrl-C stops `bench` with 130 (cli/main.py); a result of kind `interrupted` exited 3."""
    result = bench_result("interrupted")
    assert exit_status(result) == EXIT_INTERRUPTED == 130
    assert verdict_word(result) == "STOPPED"
    assert worst_exit_status([bench_result("wrong_result", "gate_failed"), result]) == EXIT_INTERRUPTED


@pytest.mark.parametrize("kind", get_args(ErrorKind))
def test_the_store_records_a_trace_exactly_for_a_kind_that_judged_the_kernel(kind: str) -> None:
    """No trace where bench says there was no verdict (exit 2 or 130), one where there was."""
    result = bench_result(kind)
    judged = exit_status(result) not in (EXIT_SETUP, EXIT_INTERRUPTED)
    assert bool(traces_from_bench(result)) == judged, kind
