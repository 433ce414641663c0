"""Orderings of events around a save that a real client produces only by chance, made certain
here with the real handlers and a stand-in for the server: a record written while the saved
text is being checked, a record an agent writes through the file watcher, a probe's end."""

from __future__ import annotations

import asyncio
import threading
import time
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
        ws.checked, ws.checked_text = "digest of a newer text", "newer text"  # what its check sets
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
        save.on_disk_change(ls, tmp_path, {"memory/v4.json"})  # type: ignore[arg-type]
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


class _RunningJobs:
    """The jobs of a server whose spawned tasks run, and which probes were cancelled."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.tasks: list[asyncio.Task[Any]] = []
        self.cancelled: list[str] = []

    def spawn(self, coroutine: Any) -> None:
        assert self.state.loop is not None
        self.tasks.append(self.state.loop.create_task(coroutine))

    def cancel_pending_probe(self, ws: WorkspaceState) -> None:
        self.cancelled.append("pending")

    def cancel_running_probe(self, ws: WorkspaceState) -> None:
        self.cancelled.append("running")


def _served(
    state: ServerState, jobs: _RunningJobs, history_check: Any, monkeypatch: pytest.MonkeyPatch
) -> _Server:
    """A server with these jobs whose history check is `history_check`; nothing sent to a client."""
    monkeypatch.setattr(save, "history_check", history_check)
    monkeypatch.setattr(notify, "workspace_changed", lambda ls, changed, *sources: None)
    ls = _Server(state)
    ls.jobs = jobs  # type: ignore[assignment]
    return ls


AGENTS_TEXT = "agents_text = 1\n"
"""The text an agent saved and records: one that parses (one that does not gets its
does_not_parse notice with the verdict, and no static step: save.verdict_check)."""


def _verdict_after_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, saved: bool
) -> tuple[WorkspaceState, _RunningJobs, list[str], list[str]]:
    """A text checked (new code, one static finding) and, when `saved`, probed; then a record
    of that text: what the history check and the static rules were called with afterwards."""
    state = ServerState()
    ws = _workspace(tmp_path)
    checked: list[str] = []
    linted: list[str] = []
    recorded = False

    def history_check(cache: Any, text: str) -> tuple[tuple[()], bool]:
        checked.append(text)
        return (), recorded

    def static_check(cache: Any, text: str) -> tuple[str, ...]:
        linted.append(text)
        return ("a static finding",)

    monkeypatch.setattr(save, "static_check", static_check)
    jobs = _RunningJobs(state)
    ls = _served(state, jobs, history_check, monkeypatch)

    async def run() -> None:
        nonlocal recorded
        state.loop = asyncio.get_running_loop()
        if saved:
            ws.kernel_digest = save._digest(AGENTS_TEXT)
            ws.probe, ws.stale = object(), False  # type: ignore[assignment]  # "probe PASS ... record it"
        assert await save.check(ls, ws, AGENTS_TEXT) is False  # type: ignore[arg-type]
        await asyncio.gather(*jobs.tasks)
        assert ws.checked_static == ("a static finding",)
        recorded = True  # the agent's `kernelscope iterate` recorded the text
        save.history_changed(ls, ws)  # type: ignore[arg-type]
        await asyncio.gather(*jobs.tasks)

    asyncio.run(run())
    return ws, jobs, checked, linted


def test_a_record_of_the_checked_text_makes_its_verdict_again_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saved, probed text is recorded: checked again without waiting for an edit, it is
    now the recorded version's (the probe's "record it" is dropped and a probe still pending
    or running is cancelled); the static findings stay, not linted twice."""
    ws, jobs, checked, linted = _verdict_after_a_record(tmp_path, monkeypatch, saved=True)
    assert checked == [AGENTS_TEXT] * 2 and linted == [AGENTS_TEXT]
    assert ws.checked_identical is True and ws.probe is None and not ws.stale
    assert sorted(jobs.cancelled) == ["pending", "running"]
    assert ws.checked_static == ("a static finding",) and "a static finding" in ws.notices


def test_a_record_leaves_a_recorded_texts_numbers_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saved text was a recorded version already and the user benchmarked it anyway
    (Benchmark now): another record makes its verdict again, which changes nothing, so the
    user's fresh numbers stay on screen."""
    state = ServerState()
    ws = _workspace(tmp_path)
    monkeypatch.setattr(save, "history_check", lambda cache, text: ((), True))
    monkeypatch.setattr(save, "static_check", lambda cache, text: ())
    monkeypatch.setattr(save, "RECORD_REST_S", 0.0)
    monkeypatch.setattr(notify, "workspace_changed", lambda ls, changed, *sources: None)
    ls = _Server(state)
    jobs = _RunningJobs(state)
    ls.jobs = jobs  # type: ignore[assignment]

    async def run() -> None:
        state.loop = asyncio.get_running_loop()
        ws.kernel_digest = save._digest("v3's text")
        assert await save.check(ls, ws, "v3's text") is True  # type: ignore[arg-type]
        ws.probe = object()  # type: ignore[assignment]  # the user's benchmark of it
        save.history_changed(ls, ws)  # type: ignore[arg-type]
        while jobs.tasks:
            await jobs.tasks.pop(0)

    asyncio.run(run())
    assert ws.probe is not None and jobs.cancelled == []


def test_a_record_cancels_only_a_saves_background_probe(tmp_path: Path) -> None:
    """The saved text became a recorded version: its background probe is cancelled; a
    benchmark the user asked for (the command, maybe of another file) runs on."""
    state = ServerState()
    ws = _workspace(tmp_path)
    jobs = Jobs(_Server(state), state)  # type: ignore[arg-type]
    asked = state.new_job(ws, "benchmark")
    ws.job = asked
    jobs.cancel_running_probe(ws)
    assert not asked.cancel.is_set()
    probe = state.new_job(ws, "benchmark", background=True)
    ws.job = probe
    jobs.cancel_running_probe(ws)
    assert probe.cancel.is_set()


def test_a_record_of_an_unsaved_text_changes_its_verdict_and_no_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text checked is only in the buffer (didOpen/didChange): its verdict is made again,
    and the saved text's probe, which measures other code, is left alone."""
    ws, jobs, checked, _linted = _verdict_after_a_record(tmp_path, monkeypatch, saved=False)
    assert checked == [AGENTS_TEXT] * 2 and ws.checked_identical is True
    assert jobs.cancelled == []


def test_a_burst_of_records_is_one_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An iteration's writes (its memory file, its store row) reach the daemon as two events:
    the text's verdict is made again once, after they rest (RECORD_REST_S)."""
    state = ServerState()
    ws = _workspace(tmp_path)
    ws.checked, ws.checked_text, ws.checked_notices = "digest", "text", ()
    ws.arrived = "text"  # (and no text arrived since: what the text's check leaves)
    calls: list[str] = []

    def history_check(cache: Any, text: str) -> tuple[tuple[()], bool]:
        calls.append(text)
        return (), True

    monkeypatch.setattr(save, "history_check", history_check)
    published: list[WorkspaceState] = []
    monkeypatch.setattr(notify, "workspace_changed", lambda ls, changed, *sources: published.append(changed))
    ls = _Server(state)
    jobs = _RunningJobs(state)
    ls.jobs = jobs  # type: ignore[assignment]

    async def run() -> None:
        state.loop = asyncio.get_running_loop()
        save.history_changed(ls, ws)  # type: ignore[arg-type]  # the memory file
        await asyncio.sleep(save.RECORD_REST_S / 5)
        save.history_changed(ls, ws)  # type: ignore[arg-type]  # the store row
        await asyncio.gather(*jobs.tasks)

    asyncio.run(run())
    assert calls == ["text"] and ws.checked_identical is True and published == [ws]


def test_a_record_during_a_check_spawns_no_second_check(tmp_path: Path) -> None:
    """A check under way runs again by itself (`check`'s loop): nothing else is started."""
    state = ServerState()
    ws = _workspace(tmp_path)
    ws.checked, ws.checked_text, ws.checked_notices = "digest", "text", None
    ls = _Server(state)
    jobs = _RunningJobs(state)
    ls.jobs = jobs  # type: ignore[assignment]
    save.history_changed(ls, ws)  # type: ignore[arg-type]
    assert ws.checked is None and jobs.tasks == []


def _threaded(state: ServerState) -> tuple[_Server, _RunningJobs]:
    """A stand-in server whose pool work runs on threads (so the loop runs on meanwhile)."""
    ls = _Server(state)
    jobs = _RunningJobs(state)
    ls.jobs = jobs  # type: ignore[assignment]

    async def off_loop(call: Any, *args: Any) -> Any:
        return await asyncio.to_thread(call, *args)

    ls.off_loop = off_loop  # type: ignore[method-assign]
    return ls, jobs


def test_static_findings_that_end_during_the_verdict_made_again_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record arrives while the text's static rules still run: their findings land while
    the new verdict is under way (made certain: the lint waits for the verdict to start, the
    verdict for the lint to land), and are published with it, not dropped."""
    state = ServerState()
    ws = _workspace(tmp_path)
    calls: list[str] = []
    verdict_started = threading.Event()
    landed_during: list[bool] = []

    def history_check(cache: Any, text: str) -> tuple[tuple[()], bool]:
        calls.append(text)
        if len(calls) == 2:  # the verdict made again
            verdict_started.set()
            deadline = time.monotonic() + 5
            while not ws.checked_static and time.monotonic() < deadline:
                time.sleep(0.01)
            landed_during.append(bool(ws.checked_static))
        return (), len(calls) == 2

    def static_check(cache: Any, text: str) -> tuple[str, ...]:
        verdict_started.wait(5)
        return ("a static finding",)

    monkeypatch.setattr(save, "history_check", history_check)
    monkeypatch.setattr(save, "static_check", static_check)
    monkeypatch.setattr(save, "STATIC_REST_S", 0.0)
    monkeypatch.setattr(save, "RECORD_REST_S", 0.0)
    monkeypatch.setattr(notify, "workspace_changed", lambda ls, changed, *sources: None)
    ls, jobs = _threaded(state)

    async def run() -> None:
        state.loop = asyncio.get_running_loop()
        await save.check(ls, ws, "text")  # type: ignore[arg-type]  # its lint spawned, not yet run
        save.history_changed(ls, ws)  # type: ignore[arg-type]
        while jobs.tasks:
            await jobs.tasks.pop(0)

    asyncio.run(run())
    assert calls == ["text", "text"] and ws.checked_identical is True
    assert landed_during == [True]  # the lint ended while the verdict ran
    assert "a static finding" in ws.notices, ws.notices


def test_a_records_verdict_never_takes_over_a_newer_texts_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record's verdict of text T waits (RECORD_REST_S) while kernel.py becomes C (a failed
    iteration reverts it) and C's check runs; a second write of the record arrives during C's
    check. T's verdict is not made (T is no longer on screen), and C is checked again against
    the new history and decides: its verdict is published, its probe scheduled by its caller."""
    state = ServerState()
    ws = _workspace(tmp_path)
    calls: list[str] = []

    def history_check(cache: Any, text: str) -> tuple[tuple[()], bool]:
        calls.append(text)
        if text == "C" and calls.count("C") == 1:
            time.sleep(0.3)  # C's first check: still running when T's verdict would start
        return (), False

    monkeypatch.setattr(save, "history_check", history_check)
    monkeypatch.setattr(save, "static_check", lambda cache, text: ())
    monkeypatch.setattr(save, "RECORD_REST_S", 0.1)
    monkeypatch.setattr(notify, "workspace_changed", lambda ls, changed, *sources: None)
    ls, jobs = _threaded(state)
    results: list[bool | None] = []

    async def run() -> None:
        state.loop = asyncio.get_running_loop()
        await save.check(ls, ws, "T")  # type: ignore[arg-type]
        save.history_changed(ls, ws)  # type: ignore[arg-type]  # the memory file: T's verdict waits
        checking = asyncio.ensure_future(save.check(ls, ws, "C"))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        save.history_changed(ls, ws)  # type: ignore[arg-type]  # the store row, during C's check
        results.append(await checking)
        while jobs.tasks:
            await jobs.tasks.pop(0)

    asyncio.run(run())
    assert calls == ["T", "C", "C"], calls
    assert results == [False] and ws.checked_text == "C" and ws.checked == save._digest("C")


def _trusted_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[ServerState, WorkspaceState, Jobs]:
    """The real jobs of a trusted workspace whose saves probe at once, with nothing sent to a client."""
    from dataclasses import replace

    state = ServerState()
    ws = _workspace(tmp_path)
    state.workspaces[ws.root] = ws  # (a job's end finds its workspace there)
    ws.settings = replace(ws.settings, trusted=True, debounce_ms=0)
    monkeypatch.setattr(notify, "workspace_changed", lambda ls, changed, *sources: None)
    monkeypatch.setattr(notify, "job_finished", lambda ls, outcome: None)
    return state, ws, Jobs(_Server(state), state)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["restart", "runIteration", "benchmark"])
def test_a_saves_probe_waits_for_the_users_job_instead_of_cancelling_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A partial restart's agent (or the user, during an iteration or a benchmark they asked
    for) saves kernel.py: the save's probe waits for that job to end and then runs; before,
    its start cancelled the job (the restart's agent was killed at its first save)."""
    state, ws, jobs = _trusted_jobs(tmp_path, monkeypatch)
    probes: list[float] = []
    release = threading.Event()
    monkeypatch.setattr(jobs, "benchmark", lambda ws, background=False: probes.append(time.monotonic()))

    def users_job(job: Any, token: str) -> dict[str, bool]:
        release.wait(10)
        return {"cancelled": job.cancel.is_set()}

    async def run() -> Any:
        state.loop = asyncio.get_running_loop()
        job = jobs.start(ws, kind, users_job, gpu=False)  # type: ignore[arg-type]
        jobs.schedule_probe(ws)  # the save
        await asyncio.sleep(0.2)
        assert not job.cancel.is_set() and probes == [] and jobs.probe_in_flight(ws)
        released = time.monotonic()
        release.set()
        for _ in range(500):
            if probes:
                break
            await asyncio.sleep(0.01)
        assert probes and probes[0] > released and not job.cancel.is_set()
        return job

    asyncio.run(run())


def test_a_saves_probe_cut_short_by_the_users_job_runs_when_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user starts a job while a save's probe runs: the probe is cancelled (one GPU, the
    user's job first) and measures the saved text again once the user's job has ended; a
    saved text found recorded meanwhile (the iteration's own) drops it."""
    state, ws, jobs = _trusted_jobs(tmp_path, monkeypatch)
    probes: list[str] = []
    monkeypatch.setattr(jobs, "benchmark", lambda ws, background=False: probes.append("probe again"))
    release = threading.Event()

    def blocks(job: Any, token: str) -> None:
        while not (job.cancel.is_set() or release.is_set()):
            time.sleep(0.01)

    async def run(recorded_meanwhile: bool) -> None:
        state.loop = asyncio.get_running_loop()
        release.clear()
        probe = jobs.start(ws, "benchmark", blocks, gpu=False, background=True)
        user = jobs.start(ws, "runIteration", blocks, gpu=False)
        assert probe.cancel.is_set() and not user.cancel.is_set() and jobs.probe_in_flight(ws)
        if recorded_meanwhile:
            jobs.cancel_pending_probe(ws)  # what the saved text's verdict does once recorded
        release.set()
        for _ in range(100):
            await asyncio.sleep(0.02)
            if probes or (user.future is not None and user.future.done() and ws.job is None):
                break
        await asyncio.sleep(0.1)

    asyncio.run(run(recorded_meanwhile=False))
    assert probes == ["probe again"]
    probes.clear()
    asyncio.run(run(recorded_meanwhile=True))
    assert probes == [] and not jobs.probe_in_flight(ws)


@pytest.mark.parametrize("recorded", [False, True])
def test_typing_right_after_a_save_keeps_the_saves_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorded: bool
) -> None:
    """The user saves and goes on typing: the buffer's check starts while the saved text's
    (the first one builds the history: seconds) still runs. The buffer's verdict is what the
    diagnostics show, and the saved text is still measured (or, recorded, not); before, the
    save's probe was dropped and the lens stayed stale until the next save."""
    state = ServerState()
    ws = _workspace(tmp_path)
    checked: list[str] = []
    saved = "text = 'the saved text'\n"  # (a text that does not parse is never measured)

    def history_check(cache: Any, text: str) -> tuple[tuple[()], bool]:
        checked.append(text)
        if len(checked) == 1:  # the buffer's debounced check starts meanwhile
            ws.checked, ws.checked_text = "digest of the typed text", "the saved text, typed on"
        else:  # the save's own decision: a second report of it (the watcher's) is not handled again
            assert ws.checking_kernel == save._digest(saved)
        return (), recorded

    class _Probes(_RunningJobs):
        def __init__(self, state: ServerState) -> None:
            super().__init__(state)
            self.scheduled = 0

        def schedule_probe(self, ws: WorkspaceState) -> None:
            self.scheduled += 1

        def probe_in_flight(self, ws: WorkspaceState) -> bool:
            return False

    jobs = _Probes(state)
    ls = _served(state, jobs, history_check, monkeypatch)

    async def run() -> None:
        state.loop = asyncio.get_running_loop()
        await save.kernel_changed(ls, ws, saved)  # type: ignore[arg-type]

    asyncio.run(run())
    assert ws.checked_text == "the saved text, typed on"  # the buffer's verdict stays on screen
    assert checked == [saved, saved]
    if recorded:
        assert jobs.scheduled == 0 and jobs.cancelled == ["pending", "running"]
    else:
        assert jobs.scheduled == 1
