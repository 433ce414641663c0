"""A lock held elsewhere: another process's writer, played by a thread that takes the lock and
holds it while the test's body runs (tests of waiting for, and refusing on, a workspace lock)."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path


@contextmanager
def held_on_a_thread(
    take: Callable[[], AbstractContextManager[object]], hold_s: float = 60.0
) -> Iterator[None]:
    """`take()` entered on another thread and held (at most `hold_s`) until the body ends."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with take():
            taken.set()
            release.wait(hold_s)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(10), "the lock was not taken"
    try:
        yield
    finally:
        release.set()
        holder.join(hold_s)


def a_restart_running(ws: Path) -> AbstractContextManager[None]:
    """What `kernelscope restart` holds from its mask to its report, held by another process's
    restart while the body runs; `ws` is made a git repository first (outside git no restart
    takes that lock)."""
    from kernelscope.daemon.engine.memory.atomic_io import RESTART_LOCK_NAME, lock_dir_of, workspace_lock

    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "the workspace"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv],
            cwd=ws,
            check=True,
            capture_output=True,
        )
    return held_on_a_thread(lambda: workspace_lock(lock_dir_of(ws), name=RESTART_LOCK_NAME))
