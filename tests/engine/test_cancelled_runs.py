"""A run its caller cancels (the daemon's newer probe, a Ctrl-C during `bench --candidates`)
is no verdict on the kernel: the one table (protocol/bench.py) names it `interrupted`. It
was `timeout` (the harness runner) or `gate_command` (the workspace's gate): a failure the
kernel never earned, exit 3, and a trace the store recorded as a hang."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
from kernelscope.daemon.engine.store.traces import traces_from_bench
from kernelscope.protocol.bench import EXIT_INTERRUPTED, BenchResult, exit_status, verdict_word
from tests.support.bench_fixtures import alive_with, make_workspace

# a gate that never ends on its own, named by a word only its process carries
GATE = f"{sys.executable} -c 'import time; time.sleep(300)' gate-that-waits"


@pytest.mark.parametrize("stage", ["harness", "gate"])
def test_a_cancelled_run_is_interrupted_not_a_timeout(tmp_path: Path, stage: str) -> None:
    # the runner's command line names its scratch copy, which keeps the workspace's folder name
    ws = make_workspace(tmp_path / "cancelled-run-ws", "hang" if stage == "harness" else "good")
    request = BenchRequest(
        workspace=ws,
        mode="interpreter",
        seeds=1,
        timeout_s=300,
        gate_command=GATE if stage == "gate" else None,
        extra_args=["--no-static-rules"],
    )
    marker = "gate-that-waits" if stage == "gate" else ws.name
    cancel = threading.Event()
    found: list[BenchResult] = []
    runner = threading.Thread(target=lambda: found.append(run_benchmark(request, cancel)))
    runner.start()
    try:
        deadline = time.monotonic() + 120
        while not alive_with(marker):
            assert time.monotonic() < deadline and runner.is_alive(), found
            time.sleep(0.1)
        cancel.set()
        runner.join(60)
    finally:
        cancel.set()
        runner.join(60)
    assert found, "run_benchmark did not return"
    result = found[0]
    assert result.error is not None and result.error.kind == "interrupted", result.error
    assert "cancelled" in result.error.message and result.status == "error", result
    assert exit_status(result) == EXIT_INTERRUPTED and verdict_word(result) == "STOPPED"
    assert traces_from_bench(result) == []  # nothing judged: nothing recorded
    assert alive_with(marker) == []
