"""The workspace cache computes a value once while it is being computed: the lens request that
arrives while `didOpen`'s warm-up is reading memory/ waits for that read instead of doing it
again beside it; a caller whose sources changed meanwhile computes its own; an error reaches
every caller that waited for it and is not kept."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kernelscope.daemon.engine.workspace import cache as cache_module
from kernelscope.daemon.engine.workspace.cache import WorkspaceCache

WAIT_S = 10.0


class Waiting:
    """How many callers wait inside `get` for another caller's computation: the cache hands
    each the first caller's future, and they wait in its `result()` (counted here)."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def until(self, reached: Callable[[], bool]) -> None:
        """Poll until `reached()`: each caller has reached `get` (it waits there; or, where the
        single-flight rule is broken, it computes for itself or was already answered), so
        that releasing the first computation tests the rule, not a caller that came late."""
        deadline = time.monotonic() + WAIT_S
        while not reached():
            assert time.monotonic() < deadline, "the callers never reached get()"
            time.sleep(0.001)


@pytest.fixture
def waiting(monkeypatch: pytest.MonkeyPatch) -> Waiting:
    counted = Waiting()

    class CountedFuture(Future[Any]):
        def result(self, timeout: float | None = None) -> Any:
            with counted.lock:
                counted.count += 1
            return super().result(timeout)

    monkeypatch.setattr(cache_module, "Future", CountedFuture)
    return counted


class Gate:
    """A compute function that counts its calls and holds the first one until released."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self) -> object:
        self.calls += 1
        value = object()
        if self.calls == 1:
            self.entered.set()
            assert self.release.wait(WAIT_S)
        return value


def held_first(pool: ThreadPoolExecutor, cache: WorkspaceCache, gate: Gate) -> Future[object]:
    """The first caller's `get`, on the pool, held inside its computation."""
    first = pool.submit(cache.get, "texts", ("memory",), gate)
    assert gate.entered.wait(WAIT_S)
    return first


def test_a_value_being_computed_is_computed_once(tmp_path: Path, waiting: Waiting) -> None:
    cache = WorkspaceCache(tmp_path)
    gate = Gate()
    with ThreadPoolExecutor(4) as pool:
        first = held_first(pool, cache, gate)
        asked = [pool.submit(cache.get, "texts", ("memory",), gate) for _ in range(3)]
        waiting.until(lambda: waiting.count + sum(f.done() for f in asked) == len(asked))
        gate.release.set()
        values = {id(first.result(WAIT_S))} | {id(w.result(WAIT_S)) for w in asked}
    assert gate.calls == 1
    assert len(values) == 1
    assert cache.get("texts", ("memory",), gate) is first.result()  # and kept


def test_a_caller_whose_sources_changed_computes_its_own(tmp_path: Path) -> None:
    cache = WorkspaceCache(tmp_path)
    gate = Gate()
    with ThreadPoolExecutor(2) as pool:
        first = held_first(pool, cache, gate)
        cache.changed("memory")  # a new record while the first read was under way
        second = cache.get("texts", ("memory",), gate)  # not the old read's value
        gate.release.set()
        old = first.result(WAIT_S)
    assert gate.calls == 2
    assert second is not old
    assert cache.get("texts", ("memory",), gate) is second  # the old read was not kept


def test_an_error_reaches_every_waiting_caller_and_is_not_kept(tmp_path: Path, waiting: Waiting) -> None:
    cache = WorkspaceCache(tmp_path)
    entered, release = threading.Event(), threading.Event()
    calls = []

    def broken() -> object:
        calls.append(1)
        entered.set()
        assert release.wait(WAIT_S)
        raise OSError("memory/ unreadable")

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(cache.get, "texts", ("memory",), broken)
        assert entered.wait(WAIT_S)
        second = pool.submit(cache.get, "texts", ("memory",), broken)
        waiting.until(lambda: waiting.count + len(calls) - 1 == 1)  # (before: released at once)
        release.set()
        for future in (first, second):
            with pytest.raises(OSError, match="unreadable"):
                future.result(WAIT_S)
    assert len(calls) == 1
    assert cache.get("texts", ("memory",), lambda: "read again") == "read again"


def test_the_kernel_lens_texts_name_the_kernels_of_the_kernel_py_they_are_kept_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kernel.py gains a kernel while its lens texts are being made (the scan read the file
    just before the save): those texts are not kept as the new file's; the next request
    names the new kernel instead of leaving its lens blank until another source changes."""
    import shutil

    from kernelscope.daemon.engine.views.lens_text import workspace_texts
    from tests.conftest import EXAMPLES

    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    cache = WorkspaceCache(ws)
    scan = cache.kernels
    saved: list[bool] = []

    def scan_then_save() -> object:
        found = scan()
        if not saved:  # the save lands right after the scan read the file
            saved.append(True)
            source = (ws / "kernel.py").read_text()
            (ws / "kernel.py").write_text(source + "\n\n@triton.jit\ndef added_kernel(x_ptr):\n    pass\n")
            cache.changed("kernel")
        return found

    monkeypatch.setattr(cache, "kernels", scan_then_save)
    first = workspace_texts(cache)[1]
    assert "added_kernel" not in first
    assert "added_kernel" in workspace_texts(cache)[1]


@pytest.mark.parametrize(
    ("path", "sources"),
    [
        ("README.md", {"readme"}),
        ("kernel.py", {"kernel"}),
        ("memory/v12.json", {"memory", "store"}),
        ("memory/live.json", {"memory", "store", "supervisor"}),
        ("memory/.v12.json.tmp", set()),  # an atomic write's temp file
        ("memory/notes.txt", set()),
        (".orchestrator_state.json", {"supervisor"}),
        (".orchestrator_mode.json", {"supervisor"}),
        (".atrex_long_horizon", {"supervisor"}),
        (".atrex_long_horizon/active_episode.json", {"supervisor"}),
        (".atrex_long_horizon/episode_4.log", set()),  # written all the time, shows nothing new
        (".atrex_long_horizon/episodes/e0004/episode_runtime/journal.json", {"supervisor"}),  # hover reads it
        (".atrex_long_horizon/episodes/e0004/episode_runtime/trace.log", set()),
        ("src/kernel.py", set()),
        ("notes.md", set()),
    ],
)
def test_which_sources_a_changed_path_touches(path: str, sources: set[str]) -> None:
    from kernelscope.daemon.engine.workspace.cache import sources_of_paths

    assert sources_of_paths([path]) == sources


def test_lens_and_hover_texts_follow_a_supervisor_that_starts(tmp_path: Path) -> None:
    """The file lens says whose next version it is and hover names the episode's outcome, both
    read from the supervisor's files: the watcher reports those as "supervisor", and the kept
    texts are made again, not left saying "next v5" alone."""
    import json
    import shutil

    from kernelscope.daemon.engine.views.history_table import kernel_history
    from kernelscope.daemon.engine.views.lens_text import workspace_texts
    from kernelscope.daemon.engine.workspace.cache import sources_of_paths
    from tests.conftest import EXAMPLES

    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    cache = WorkspaceCache(ws)
    kernels = [k.name for k in cache.kernels().kernels]
    assert "supervisor's" not in workspace_texts(cache)[0]
    assert "tiles exhausted" not in kernel_history(cache, kernels[0], kernels).markdown

    journal = ws / ".atrex_long_horizon" / "episodes" / "e0004" / "episode_runtime" / "journal.json"
    journal.parent.mkdir(parents=True)
    journal.write_text(
        json.dumps(
            {
                "episode": 4,
                "memory_version": 4,
                "state": "candidate_ready",
                "outcome": {"summary": "tiles exhausted"},
            }
        )
    )
    (ws / ".orchestrator_state.json").write_text(json.dumps({"stall": 0}))
    cache.changed(*sources_of_paths([".atrex_long_horizon", ".orchestrator_state.json"]))
    assert "(the supervisor's; kernelscope observes)" in workspace_texts(cache)[0]
    assert "tiles exhausted" in kernel_history(cache, kernels[0], kernels).markdown
