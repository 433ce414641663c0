"""The daemon's stdin is the editor's JSON-RPC channel: a child process it starts (git, and a
hook git runs; nvidia-smi) must never inherit it, or a child that reads its stdin swallows the
editor's next messages. Each call is made in a process whose stdin holds bytes; a stand-in for
the program on PATH records what it read (and passes it on to the real program)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

MARKER = b'Content-Length: 52\r\n\r\n{"jsonrpc": "2.0", "method": "editor-bytes"}'

CALLS = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from kernelscope.daemon.engine.history.gitdata import run_git
    from kernelscope.daemon.engine.run.executors import local_gpu_count
    from kernelscope.daemon.engine.run.scratch import workspace_files
    from kernelscope.daemon.engine.store.traces import _git_state
    from kernelscope.daemon.engine.workflows.git import Git

    ws = Path(sys.argv[1])
    kernel = ws / "kernel.py"
    kernel.write_text("x = 2\\n")
    Git(ws).commit_paths([kernel], "v1")  # Git.run (a write) and Git._plain
    run_git(ws, "log", "-1", "--format=%H")
    _git_state(kernel)
    workspace_files(ws)
    local_gpu_count()
    """
)


def _stand_in(folder: Path, name: str, record: Path) -> None:
    """`name` on PATH: appends what it reads on stdin to `record`, then runs the real one."""
    real = shutil.which(name)
    script = folder / name
    if real is None:  # (nvidia-smi on a machine without a GPU: a stand-in that lists none)
        script.write_text(f'#!/bin/sh\ncat >> "{record}"\n')
    else:
        script.write_text(f'#!/bin/sh\ntee -a "{record}" | "{real}" "$@"\n')
    script.chmod(0o755)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_no_child_reads_the_daemons_stdin(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run(["git", "add", "kernel.py"], cwd=ws, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "v0"], cwd=ws, check=True
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "read-from-stdin"
    record.write_bytes(b"")
    for name in ("git", "nvidia-smi"):
        _stand_in(bin_dir, name, record)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-c", CALLS, str(ws)], input=MARKER, capture_output=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"editor-bytes" not in record.read_bytes()  # (before: git and nvidia-smi read them)
