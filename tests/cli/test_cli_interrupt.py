"""`kernelscope bench` stopped by Ctrl-C or SIGTERM while its runner is busy: the runner (in a
session of its own, where the terminal's signals do not reach) is killed, not left running
without its timeout and memory cap, and the temporary folders (scratch copy, child log) are
removed. SIGTERM ends the CLI through SystemExit so that the cleanup runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.bench_fixtures import alive_with, make_workspace

RUNNER = "kernelscope.kernels.runner"


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_bench_leaves_no_runner_and_no_temp_folders(tmp_path: Path, sent: signal.Signals) -> None:
    ws = make_workspace(tmp_path / "hang", "hang")
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "TRITON_INTERPRET": "1"}
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernelscope.daemon.cli.main",
            "bench",
            "-w",
            str(ws),
            "--no-static-rules",
            "--json",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    marker = str(temp)
    try:
        deadline = time.monotonic() + 60
        while not [p for p in alive_with(marker) if p != cli.pid] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [p for p in alive_with(marker) if p != cli.pid], "the runner never started"
        time.sleep(2)  # the runner is in the hanging kernel
        cli.send_signal(sent)
        cli.wait(timeout=30)
        assert cli.returncode in (130, 143), cli.returncode
        assert alive_with(marker) == []
        assert sorted(os.listdir(temp)) == []
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        for pid in alive_with(marker):  # only what this test started carries its temp folder
            os.kill(pid, signal.SIGKILL)
