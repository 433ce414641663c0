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


@pytest.mark.parametrize(
    "args",
    [
        ["exp", "list", "--json", "--db", "{tmp}/missing.sqlite"],  # an error document
        ["bench", "--json", "--mode", "banana", "-w", "{ws}"],  # bench's own document
        ["memory", "list", "--json", "-w", "{ws}"],  # the fast path
    ],
)
def test_a_reader_that_goes_away_gets_no_traceback(tmp_path: Path, args: list[str]) -> None:
    """`kernelscope ... --json | head`: the reader closed the pipe before the document was
    written. Click quiets a broken pipe inside a command, but the JSON documents written after
    it returned (an error's, bench's) raised BrokenPipeError through main: a traceback (found by
    a review). Every path now ends with exit 1 and nothing on stderr about the pipe."""
    import shutil

    ws = tmp_path / "ws"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "vector_add", ws)
    kernelscope = str(Path(sys.executable).with_name("kernelscope"))
    argv = [kernelscope, *(a.format(ws=ws, tmp=tmp_path) for a in args)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before anything was written
    err = process.stderr.read().decode()
    assert process.wait(60) == 1 and "Traceback" not in err and "BrokenPipe" not in err, err
