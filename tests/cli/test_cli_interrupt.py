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


@pytest.mark.parametrize(
    ("sent", "candidates"), [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)]
)
def test_a_stopped_bench_leaves_no_runner_and_no_temp_folders(
    tmp_path: Path, sent: signal.Signals, candidates: bool
) -> None:
    """With --candidates the jobs run on a pool's threads (through warm workers), whose exit
    waited for each running job to end: Ctrl-C then took the runners' timeout (900 s)."""
    ws = make_workspace(tmp_path / "hang", "hang")
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "TRITON_INTERPRET": "1"}
    more: list[str] = []
    if candidates:
        (ws / "other.py").write_text((ws / "kernel.py").read_text())
        more = ["--candidates", str(ws / "kernel.py"), str(ws / "other.py")]
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernelscope.daemon.cli.main",
            "bench",
            "-w",
            str(ws),
            *more,
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
        # (torch's own compile cache, made by the warm workers' import of torch, is not ours)
        assert [name for name in sorted(os.listdir(temp)) if not name.startswith("torchinductor_")] == []
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        for pid in alive_with(marker):  # only what this test started carries its temp folder
            os.kill(pid, signal.SIGKILL)
