"""Nothing writes into a workspace once the session that asked for the write has ended
(engine.for_session: the daemon's shutdown or exit, the editor gone): each writing path of the
daemon's commands and jobs, waiting for a workspace's lock when the session ends, gives up at
once and writes nothing, however long the lock is held afterwards; and the store writes nothing
for an ended session."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelscope.daemon.engine import SessionEnded, for_session
from kernelscope.daemon.engine.memory import atomic_io
from kernelscope.daemon.engine.memory.atomic_io import ITERATION_LOCK_NAME, LOCK_NAME, workspace_lock
from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.daemon.engine.workflows.iterate import IterateOptions, run_iteration
from kernelscope.daemon.engine.workflows.restart import PartialRestart, RestartOptions
from kernelscope.daemon.engine.workspace.workspace import Workspace
from tests.conftest import EXAMPLES
from tests.support.locks import held_on_a_thread

GIVES_UP_S = 10.0  # far below the locks' own timeouts (60 s for memory, 600 s for an iteration's)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The vector_add example (v0..v4 recorded), committed, with v1 masked."""
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    Workspace(ws).memory.set_masked(["v1"], masked=True)
    for argv in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *argv], cwd=ws, check=True)
    return ws


def _written(ws: Path, db: str) -> dict[str, bytes]:
    """What a write changes: the work tree's files, HEAD and the store's rows."""
    files = {
        str(p.relative_to(ws)): p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git" not in p.parts
    }
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True).stdout
    rows = [e.id for e in ExperimentStore(db).list_experiments()]
    return {**files, "HEAD": head.encode(), "rows": repr(rows).encode()}


def _restart(ws: Path, db: str) -> object:
    agent = f'{sys.executable} -c "print(1)"'
    return PartialRestart(ws, RestartOptions(agent=agent, seed=1, timeout_s=60)).run()


def _iterate(ws: Path, db: str) -> object:
    options = IterateOptions(action_category="block_size", mode="interpreter", seeds=1, db_url=db)
    return run_iteration(ws, options)


# The writing commands and jobs of the daemon (lsp/features/commands.py) by the engine call each
# makes, and the lock each waits for first.
WRITES: dict[str, tuple[Callable[[Path, str], object], str]] = {
    "maskHalf": (lambda ws, db: Workspace(ws).memory.mask_half(None, seed=1), LOCK_NAME),
    "unmask": (lambda ws, db: Workspace(ws).memory.set_masked(["v1"], masked=False), LOCK_NAME),
    "runIteration": (_iterate, ITERATION_LOCK_NAME),
    "restart": (_restart, ITERATION_LOCK_NAME),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_a_write_waiting_for_its_lock_when_the_session_ends_writes_nothing(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    write, lock_name = WRITES[name]
    db = str(tmp_path / "exp.sqlite")
    before = _written(workspace, db)
    end, waiting = threading.Event(), threading.Event()
    real_flock = atomic_io._flock

    def flock(path: Path, timeout: float) -> int:  # (the write waits for the lock held elsewhere)
        if path.name == lock_name:
            waiting.set()
        return real_flock(path, timeout)

    monkeypatch.setattr(atomic_io, "_flock", flock)
    outcome: list[object] = []

    def run() -> None:
        with for_session(end):
            try:
                outcome.append(write(workspace, db))
            except Exception as exc:  # (the test reports it)
                outcome.append(exc)

    lock_dir = Workspace(workspace).memory.lock_dir
    with held_on_a_thread(lambda: workspace_lock(lock_dir, name=lock_name)):
        writer = threading.Thread(target=run)
        writer.start()
        assert waiting.wait(60), f"{name} never waited for {lock_name}"
        end.set()  # the editor shut the daemon down
        writer.join(GIVES_UP_S)
        assert not writer.is_alive(), f"{name} went on waiting for {lock_name} after the session ended"
    assert len(outcome) == 1 and isinstance(outcome[0], SessionEnded), outcome
    assert _written(workspace, db) == before


@pytest.mark.parametrize("write", ["create", "update"])
def test_the_store_writes_nothing_for_an_ended_session(tmp_path: Path, write: str) -> None:
    """recordExperiment (the store's fast SQLite insert) and an update (its SQLAlchemy write
    transaction): the write lock taken, nothing is written once the session has ended."""
    store = ExperimentStore(str(tmp_path / "exp.sqlite"))
    store.create_experiment({"id": "e1", "change_summary": "kept", "workspace": str(tmp_path)})
    end = threading.Event()
    end.set()
    with for_session(end), pytest.raises(SessionEnded):
        if write == "create":
            store.create_experiment({"id": "e2", "change_summary": "late", "workspace": str(tmp_path)})
        else:
            store.update_experiment("e1", change_summary="late")
    assert [(e.id, e.change_summary) for e in store.list_experiments()] == [("e1", "kept")]
    store.create_experiment({"id": "e3", "change_summary": "no session", "workspace": str(tmp_path)})
    assert len(store.list_experiments()) == 2


def test_a_write_that_began_is_finished_when_the_session_ends_in_its_middle(workspace: Path) -> None:
    """A restart has masked half of the memory (under the iteration lock) and waits for git's
    commit lock, held by another kernelscope, when the session ends: the end cut that inner wait
    short, leaving the mask written but uncommitted (a `git checkout .` would undo it in
    silence) while the error said nothing was written. The session's end stops a write before
    its first lock only: the restart waits for the commit lock and commits its mask."""
    from kernelscope.daemon.engine.workflows.git import COMMIT_LOCK_NAME

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True, text=True).stdout
    before = {p.name: p.read_bytes() for p in (workspace / "memory").glob("v*.json")}
    end, outcome = threading.Event(), {}

    def restart() -> None:
        try:
            with for_session(end):
                outcome["report"] = _restart(workspace, "")
        except BaseException as exc:  # (reported below)
            outcome["error"] = exc

    with held_on_a_thread(lambda: workspace_lock(workspace / ".git" / "kernelscope", 30, COMMIT_LOCK_NAME)):
        worker = threading.Thread(target=restart)
        worker.start()
        deadline = time.monotonic() + GIVES_UP_S
        while before == {p.name: p.read_bytes() for p in (workspace / "memory").glob("v*.json")}:
            assert time.monotonic() < deadline and worker.is_alive(), outcome  # the mask is written
            time.sleep(0.01)
        end.set()  # the editor's session ends while the restart waits for the commit lock
        worker.join(0.5)
        assert worker.is_alive(), outcome  # it went on waiting for the commit lock
    worker.join(GIVES_UP_S * 6)
    assert "error" not in outcome, outcome["error"]
    new_head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True, text=True
    ).stdout
    status = subprocess.run(
        ["git", "status", "--short", "memory"], cwd=workspace, capture_output=True, text=True
    )
    assert new_head != head and status.stdout == ""  # the mask committed, nothing left half done
