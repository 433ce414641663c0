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

from tests.support.bench_fixtures import KERNELS, alive_with, make_workspace

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


@pytest.mark.parametrize("json_out", [True, False])
def test_ctrl_c_during_candidates_keeps_the_ones_that_finished(tmp_path: Path, json_out: bool) -> None:
    """`bench --candidates` stopped by Ctrl-C while its second candidate hangs: the first had
    passed, but the whole output was one "interrupted" document (human mode: nothing), so the
    130 of worst_exit_status was never reached and the finished work was lost. Now the report
    holds the finished candidate's result and the stopped one as `interrupted`, exit 130."""
    import json

    ws = make_workspace(tmp_path / "ws", "good")
    # in a folder, so that only the jobs' runners name the files (the CLI's argv names the folder)
    (ws / "cands").mkdir()
    (ws / "cands" / "a_good.py").write_text(KERNELS["good"])
    (ws / "cands" / "b_stuck.py").write_text(KERNELS["hang"])
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    argv = [sys.executable, "-m", "kernelscope.daemon.cli.main", "bench", "-w", str(ws)]
    argv += ["--candidates", str(ws / "cands"), "--no-static-rules"]
    cli = subprocess.Popen(
        [*argv, *(["--json"] if json_out else [])],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # each job's runner carries its candidate's path; the stuck one runs once a_good.py's ended
        deadline = time.monotonic() + 240
        while not (alive_with("b_stuck.py") and not alive_with("a_good.py")) and time.monotonic() < deadline:
            assert cli.poll() is None, cli.communicate()
            time.sleep(0.2)
        assert alive_with("b_stuck.py"), "the stuck candidate never started"
        time.sleep(1)
        cli.send_signal(signal.SIGINT)
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 130, (cli.returncode, out, err)
    assert alive_with("b_stuck.py") == []
    if json_out:
        report = json.loads(out)  # the one document: the report, not an "interrupted" one
        by_name = {Path(r["candidate"]).name: r["result"] for r in report["ranking"]}
        assert by_name["a_good.py"]["passed"] is True, by_name
        assert by_name["b_stuck.py"]["error"]["kind"] == "interrupted", by_name
        assert any("interrupted (Ctrl-C): 1 of 2 candidates" in m for m in report["messages"]), report
    else:
        # rank -> verdict, failure (a long path folds a row onto a second line without a rank)
        cells = [[c.strip() for c in line.split("│")] for line in out.splitlines() if line.count("│") > 3]
        rows = {row[1]: (row[3], row[6]) for row in cells if row[1]}
        assert rows["1"] == ("PASS", ""), out  # the passing candidate ranks first
        assert rows["2"][0] == "STOPPED" and rows["2"][1].startswith("interrupted: "), out
        assert "interrupted (Ctrl-C): 1 of 2 candidates did not finish" in err, err
