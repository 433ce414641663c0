"""The workspace lock (memory/atomic_io.workspace_lock): flock from the standard library, the
same lock filelock takes, so a kernelscope that still uses filelock and this one exclude each
other; a lock held too long is a clear error; where flock is missing, filelock stands in."""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path

import filelock
import pytest

from kernelscope.daemon.engine import DataError
from kernelscope.daemon.engine.memory import atomic_io
from kernelscope.daemon.engine.memory.atomic_io import LOCK_NAME, workspace_lock
from tests.support.locks import held_on_a_thread


def held_by_filelock(path: Path) -> AbstractContextManager[None]:
    """`path` locked by filelock (what kernelscope took before) on another thread."""
    return held_on_a_thread(lambda: filelock.FileLock(str(path)), hold_s=10)


def test_a_filelock_holder_excludes_the_lock_and_the_lock_waits_for_its_release(tmp_path: Path) -> None:
    busy = pytest.raises(DataError, match=r"another kernelscope process has held .* for 0.2 s")
    with held_by_filelock(tmp_path / LOCK_NAME), busy, workspace_lock(tmp_path, timeout=0.2):
        pass
    with workspace_lock(tmp_path, timeout=0.2):  # released: taken at once
        pass


def test_the_lock_excludes_filelock(tmp_path: Path) -> None:
    with workspace_lock(tmp_path), pytest.raises(filelock.Timeout):
        filelock.FileLock(str(tmp_path / LOCK_NAME), timeout=0.1).acquire()
    other = filelock.FileLock(str(tmp_path / LOCK_NAME), timeout=0.1)
    other.acquire()  # released when the block ended
    other.release()


def test_threads_taking_the_lock_run_one_at_a_time(tmp_path: Path) -> None:
    inside: list[int] = []
    overlaps: list[int] = []

    def work(worker: int) -> None:
        for _ in range(20):
            with workspace_lock(tmp_path, timeout=30):
                inside.append(worker)
                if len(inside) > 1:
                    overlaps.append(worker)
                time.sleep(0.001)
                inside.remove(worker)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert overlaps == []


def test_names_are_independent_locks(tmp_path: Path) -> None:
    with workspace_lock(tmp_path, timeout=0.2), workspace_lock(tmp_path, timeout=0.2, name="other.lock"):
        pass


def test_where_flock_is_missing_filelock_takes_the_same_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_flock(path: Path, timeout: float) -> int:
        raise atomic_io._NoFlock

    monkeypatch.setattr(atomic_io, "_flock", no_flock)
    busy = pytest.raises(DataError, match="another kernelscope process")
    with held_by_filelock(tmp_path / LOCK_NAME), busy, workspace_lock(tmp_path, timeout=0.2):
        pass
    with workspace_lock(tmp_path, timeout=0.2):
        assert (tmp_path / LOCK_NAME).exists()


def test_a_workspace_below_a_repositorys_top_locks_in_its_git_dir_and_waits_for_an_earlier_kernelscope(
    tmp_path: Path,
) -> None:
    """Workspaces below a repository's top (repo/kernels/softmax) lock in the repository's git
    dir, each its own lock (a writer of one never waits for another's). An earlier kernelscope
    still running (a daemon started before the upgrade) locks memory/.kernelscope.lock, which it
    left there: while that file exists it is taken too, so the two still exclude each other."""
    import subprocess

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    softmax, gemm = repo / "kernels" / "softmax", repo / "kernels" / "gemm"
    assert atomic_io.lock_dir_of(softmax) == repo.resolve() / ".git/kernelscope/workspaces/kernels/softmax"
    with atomic_io.memory_write_lock(softmax), atomic_io.memory_write_lock(gemm):
        pass  # independent locks (one lock would wait for itself)
    assert not (softmax / "memory" / LOCK_NAME).exists() and not (gemm / "memory" / LOCK_NAME).exists()
    legacy = softmax / "memory" / LOCK_NAME
    legacy.parent.mkdir(parents=True)
    legacy.touch()
    written = threading.Event()

    def write() -> None:
        with atomic_io.memory_write_lock(softmax):
            written.set()

    writer = threading.Thread(target=write)
    with held_by_filelock(legacy):
        writer.start()
        assert not written.wait(0.5)  # waits for the earlier kernelscope's write
    writer.join(10)
    assert written.is_set()
