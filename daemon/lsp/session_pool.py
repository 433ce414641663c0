"""The daemon's thread pools, whose every task is the editor session's work.

A task submitted to a `SessionPool` runs under `engine.for_session`: once the session ends
(shutdown, or exit without it: lsp/jobs.py `stop_all`), a command or job still waiting for a
workspace's lock or the store's gives up and writes nothing, while a write that had begun is
finished. The wrapper lives here, at the bottom of every pool thread's stack, and nothing in the
work calls back into this module (the save flow crosses no file twice: tests/lsp/test_save_flow.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from kernelscope.daemon.engine import for_session

T = TypeVar("T")


class SessionPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor whose tasks are the session's (ended: `session_end` set)."""

    def __init__(self, session_end: threading.Event, max_workers: int, thread_name_prefix: str) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix=thread_name_prefix)
        self.session_end = session_end

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        return super().submit(_as_session_work, self.session_end, fn, *args, **kwargs)


def _as_session_work(end: threading.Event, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    with for_session(end):
        return fn(*args, **kwargs)
