"""A lock held elsewhere: another process's writer, played by a thread that takes the lock and
holds it while the test's body runs (tests of waiting for, and refusing on, a workspace lock)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager


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
