"""Orderings of events around a save that a real client produces only by chance, made certain
here with the real handlers and a stand-in for the server: a record written while the saved
text is being checked, a record an agent writes through the file watcher, a probe's end."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from kernelscope.daemon.lsp import notify
from kernelscope.daemon.lsp.features import save
from kernelscope.daemon.lsp.jobs import Jobs
from kernelscope.daemon.lsp.state import ServerState, WorkspaceState


class _Jobs:
    def spawn(self, coroutine: Any) -> None:
        coroutine.close()  # the static rules' step: not what these tests follow


class _Server:
    """What the save handlers use of KernelscopeServer: off_loop and the jobs."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.jobs = _Jobs()
        self.client_capabilities = None

    async def off_loop(self, call: Any, *args: Any) -> Any:
        return call(*args)


def _workspace(tmp_path: Path) -> WorkspaceState:
    return WorkspaceState(tmp_path, object)  # type: ignore[arg-type]  # (the history check is replaced)


def test_a_record_written_during_the_check_gets_the_text_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job's end or an agent's record says memory/ changed while the saved text's check
    runs: the text is checked again against the new history, not dropped as if a newer
    text had arrived (which left the save neither published nor benchmarked)."""
    ws = _workspace(tmp_path)
    calls: list[str] = []

    def history_check(cache: Any, text: str) -> tuple[tuple[()], bool]:
        calls.append(text)
        if len(calls) == 1:
            ws.checked = None  # what notify.workspace_changed(..., "memory", "store") does
            return (), False  # the verdict of the history before the record
        return (), True  # the new record holds this text

    monkeypatch.setattr(save, "history_check", history_check)
    ls = _Server(ServerState())
    identical = asyncio.run(save.check(ls, ws, "kernel text", publish=False))  # type: ignore[arg-type]
    assert calls == ["kernel text", "kernel text"]
    assert identical is True and ws.checked_identical is True and ws.checked is not None


def test_a_newer_text_still_supersedes_a_check_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _workspace(tmp_path)

    def history_check(cache: Any, text: str) -> tuple[tuple[()], bool]:
        ws.checked = "digest of a newer text"
        return (), False

    monkeypatch.setattr(save, "history_check", history_check)
    ls = _Server(ServerState())
    assert asyncio.run(save.check(ls, ws, "older text", publish=False)) is None  # type: ignore[arg-type]


def test_a_record_an_agent_writes_reaches_the_check_through_the_watcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """memory/v4.json written by an agent's `kernelscope iterate`: the watcher's report is told
    to the workspace as memory and store, so the text's verdict is made again."""
    state = ServerState()
    ws = _workspace(tmp_path)
    state.workspaces[tmp_path] = ws
    ws.checked = "digest of the text on screen"
    told: list[tuple[str, ...]] = []

    def workspace_changed(ls: Any, changed: WorkspaceState, *sources: str) -> None:
        assert changed is ws
        told.append(tuple(sorted(sources)))
        if {"memory", "store"} & set(sources):
            changed.checked = None

    monkeypatch.setattr(notify, "workspace_changed", workspace_changed)
    ls = _Server(state)

    async def run() -> None:
        state.loop = asyncio.get_running_loop()
        save.on_disk_change(ls, tmp_path, {"v4.json"})  # type: ignore[arg-type]
        await asyncio.sleep(0.05)

    asyncio.run(run())
    assert told == [("memory", "store")] and ws.checked is None


@pytest.mark.parametrize(
    ("kind", "written"), [("benchmark", ()), ("runIteration", ("kernel", "memory", "store"))]
)
def test_a_job_end_names_what_the_job_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, written: tuple[str, ...]
) -> None:
    """An iteration writes memory/, the store and kernel.py's commit; a probe writes none of
    them, so its end keeps the built history and the lens texts (a rebuild of a thousand
    versions' history after every save's probe otherwise)."""
    state = ServerState()
    ws = _workspace(tmp_path)
    told: list[tuple[str, ...]] = []
    ended = threading.Event()

    def workspace_changed(ls: Any, changed: WorkspaceState, *sources: str) -> None:
        told.append(tuple(sorted(sources)))

    def job_finished(ls: Any, outcome: dict[str, Any]) -> None:
        ended.set()

    monkeypatch.setattr(notify, "workspace_changed", workspace_changed)
    monkeypatch.setattr(notify, "job_finished", job_finished)
    jobs = Jobs(_Server(state), state)  # type: ignore[arg-type]

    async def run() -> None:
        state.loop = asyncio.get_running_loop()
        jobs.start(ws, kind, lambda job, token: {"ok": True}, gpu=kind == "benchmark")  # type: ignore[arg-type]
        while not ended.is_set():
            await asyncio.sleep(0.01)

    asyncio.run(run())
    # (the start's own refresh, with no source, may come before or after the end's)
    assert [sources for sources in told if sources] == ([written] if written else []), told
