"""Orderings of texts arriving around a save's check and publication, made certain with the
real handlers and a stand-in for the server (as tests/lsp/test_save_races.py): a second text
arriving between the first text's verdict and its publication (the parse on the pool), or
while the first text's history check runs on the pool."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kernelscope.daemon.engine.views.diagnostics import Notice
from kernelscope.daemon.lsp import notify
from kernelscope.daemon.lsp.features import save
from kernelscope.daemon.lsp.state import ServerState, WorkspaceState


class _Jobs:
    def spawn(self, coroutine: Any) -> None:
        coroutine.close()  # the static rules' step: not what these tests follow

    def probe_in_flight(self, ws: Any) -> bool:
        return False

    def schedule_probe(self, ws: Any) -> None:
        pass


class _ProbingJobs(_Jobs):
    """A trusted workspace's jobs: a saved new text's probe is scheduled (and in flight)."""

    def __init__(self) -> None:
        self.probes = 0
        self.spawned: list[str] = []

    def spawn(self, coroutine: Any) -> None:
        self.spawned.append(coroutine.__name__)
        coroutine.close()

    def probe_in_flight(self, ws: Any) -> bool:
        return self.probes > 0

    def schedule_probe(self, ws: Any) -> None:
        self.probes += 1


class _UntrustedJobs(_ProbingJobs):
    """An untrusted workspace's jobs: a save schedules nothing (Jobs.schedule_probe)."""

    def schedule_probe(self, ws: Any) -> None:
        assert not ws.settings.runs_on_save


class _Server:
    """What the save handlers use of KernelscopeServer; `on_parse` runs while the pool parses
    the saved text (between its verdict and its publication)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.jobs = _Jobs()
        self.client_capabilities = None
        self.on_parse: Any = None

    async def off_loop(self, call: Any, *args: Any) -> Any:
        if call is save._parses and self.on_parse is not None:
            hook, self.on_parse = self.on_parse, None
            hook()
        return call(*args)


def _verdicts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each text's verdict names it; the texts checked, in order."""
    checked: list[str] = []

    def history_check(cache: Any, text: str) -> tuple[tuple[Notice, ...], bool]:
        checked.append(text)
        return (Notice("information", "near_tried", f"verdict of {text}"),), False

    monkeypatch.setattr(save, "history_check", history_check)
    return checked


def _publications(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """What each publication carried (codes), marking it published as notify does."""
    published: list[list[str]] = []

    def workspace_changed(ls: Any, ws: WorkspaceState, *sources: str) -> None:
        published.append([n.code for n in ws.notices])
        ws.notices_published()

    monkeypatch.setattr(notify, "workspace_changed", workspace_changed)
    return published


def test_the_not_trusted_notice_is_said_once_even_when_a_second_text_drops_it_unpublished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Untrusted, re-benchmark on save on: A's check says "re-benchmark on save is off", but B
    arrives (the watcher's report of the agent's next write) before A's publication, dropping
    A's notices with it. Before: the notice counted as said at A's check, so B's check left it
    out and no publication ever carried it ([[], [], ['near_tried']]): the model never learnt
    that nothing would be measured. It is said once: by the first publication that carries it."""
    ws = WorkspaceState(tmp_path, object)  # type: ignore[arg-type]
    ws.settings = ws.settings.__class__(bench_on_save=True)  # no `trusted`: runs_on_save False
    assert not ws.settings.runs_on_save
    _verdicts(monkeypatch)
    published = _publications(monkeypatch)
    ls = _Server(ServerState())

    async def run() -> None:
        digest_a = save._saved_text_arrived(ls, ws, "A = 1\n")  # type: ignore[arg-type]
        assert digest_a is not None
        arrived: list[str] = []

        def b_arrives() -> None:  # what on_disk_change.handle does with the next write
            digest_b = save._saved_text_arrived(ls, ws, "B = 2\n")  # type: ignore[arg-type]
            assert digest_b is not None
            arrived.append(digest_b)
            notify.workspace_changed(ls, ws, "kernel")  # type: ignore[arg-type]

        ls.on_parse = b_arrives
        await save._saved_text_checked(ls, ws, "A = 1\n", digest_a)  # type: ignore[arg-type]
        await save._saved_text_checked(ls, ws, "B = 2\n", arrived[0])  # type: ignore[arg-type]
        digest_c = save._saved_text_arrived(ls, ws, "C = 3\n")  # type: ignore[arg-type]
        assert digest_c is not None
        await save._saved_text_checked(ls, ws, "C = 3\n", digest_c)  # type: ignore[arg-type]

    asyncio.run(run())
    said = [p for p in published if "bench_on_save_off" in p]
    assert said == [["near_tried", "bench_on_save_off"]], published
    assert published[-1] == ["near_tried"], published  # C's: not said again


def test_an_older_texts_check_ending_after_a_newer_text_arrived_settles_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher's handle(): B arrives (its check spawned, to run a loop turn later) while
    A's history check runs on the pool. Before: A's check, ending in between, put A's verdict
    back as what a publication now says, with B on disk."""
    ws = WorkspaceState(tmp_path, object)  # type: ignore[arg-type]
    ls = _Server(ServerState())
    checked = _verdicts(monkeypatch)
    published = _publications(monkeypatch)

    def history_check(cache: Any, text: str) -> tuple[tuple[Notice, ...], bool]:
        if text == "A = 1\n":
            save._saved_text_arrived(ls, ws, "B = 2\n")  # type: ignore[arg-type]  # (B's check not started)
        return verdict(cache, text)

    verdict = save.history_check
    monkeypatch.setattr(save, "history_check", history_check)

    async def run() -> None:
        digest_a = save._saved_text_arrived(ls, ws, "A = 1\n")  # type: ignore[arg-type]
        assert digest_a is not None
        await save._saved_text_checked(ls, ws, "A = 1\n", digest_a)  # type: ignore[arg-type]

    asyncio.run(run())
    assert checked == ["A = 1\n"]
    assert not ws.notices and published == [], (ws.notices, published)


def test_a_records_verdict_again_waits_for_a_newer_texts_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record (memory/ changed) asks for the checked text A's verdict again; B arrived from
    the watcher before that runs, its check not started yet. Before: A was checked again and
    its verdict published, with B on disk."""
    ws = WorkspaceState(tmp_path, object)  # type: ignore[arg-type]
    ls = _Server(ServerState())
    checked = _verdicts(monkeypatch)
    published = _publications(monkeypatch)
    monkeypatch.setattr(save, "RECORD_REST_S", 0.0)

    async def run() -> None:
        digest_a = save._saved_text_arrived(ls, ws, "A = 1\n")  # type: ignore[arg-type]
        assert digest_a is not None
        await save._saved_text_checked(ls, ws, "A = 1\n", digest_a)  # type: ignore[arg-type]
        ws.checked = None  # what history_changed does on a record
        assert save._saved_text_arrived(ls, ws, "B = 2\n") is not None  # type: ignore[arg-type]
        del published[:], checked[:]
        await save._verdict_again(ls, ws, "A = 1\n")  # type: ignore[arg-type]

    asyncio.run(run())
    assert checked == [] and published == [] and not ws.notices, (checked, published, ws.notices)


@pytest.mark.parametrize("eol", ["\r\n", "\n"])
def test_the_watchers_report_of_a_saved_crlf_file_is_the_same_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eol: str
) -> None:
    """An editor saves a CRLF file (VS Code on a file written on Windows): didSave sends the
    buffer's text, CRLF, and the watcher then reports the file. Before: the watcher read it
    with universal newlines (LF), a second, different text: its arrival published nothing (an
    empty blink) and a second check was spawned (trusted: a second probe) at every save."""
    text = eol.join(["A = 1", "B = 2", ""])
    (tmp_path / "kernel.py").write_bytes(text.encode())
    ws = WorkspaceState(tmp_path, object)  # type: ignore[arg-type]
    _verdicts(monkeypatch)
    published = _publications(monkeypatch)
    state = ServerState()
    state.workspaces[ws.root] = ws
    monkeypatch.setattr(state, "on_loop", lambda callback: callback())  # (the watcher's thread hands over)
    monkeypatch.setattr(state, "rescan", lambda: None)  # (the folder is a workspace still)
    ls = _Server(state)
    ls.jobs = jobs = _ProbingJobs()

    async def run() -> None:
        digest = save._saved_text_arrived(ls, ws, text)  # type: ignore[arg-type]  # didSave's text
        assert digest is not None
        await save._saved_text_checked(ls, ws, text, digest)  # type: ignore[arg-type]

    asyncio.run(run())
    verdict = published[-1]
    assert "near_tried" in verdict and jobs.probes == 1, published
    del published[:], jobs.spawned[:]
    save.on_disk_change(ls, ws.root, {"kernel.py"})  # type: ignore[arg-type]  # the watcher's report of the save
    assert jobs.spawned == [] and published == [], (jobs.spawned, published)  # (verdict: up already)


def test_the_watchers_report_of_a_checked_text_in_an_untrusted_workspace_is_not_handled_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Untrusted: didSave's text checked and published; the watcher then reports the same
    bytes on disk. No probe runs here, so the text stayed "stale" and the report counted as a
    new one. Before: it was handled again (a second check step, a parse on the pool) and its
    verdict published twice more: [verdict, verdict] reached the agent once more."""
    text = "A = 1\n"
    (tmp_path / "kernel.py").write_text(text)
    ws = WorkspaceState(tmp_path, object)  # type: ignore[arg-type]
    ws.settings = ws.settings.__class__(bench_on_save=True)  # no `trusted`: runs_on_save False
    assert not ws.settings.runs_on_save
    _verdicts(monkeypatch)
    published = _publications(monkeypatch)
    state = ServerState()
    state.workspaces[ws.root] = ws
    monkeypatch.setattr(state, "on_loop", lambda callback: callback())  # (the watcher's thread hands over)
    monkeypatch.setattr(state, "rescan", lambda: None)  # (the folder is a workspace still)
    ls = _Server(state)
    ls.jobs = jobs = _UntrustedJobs()

    async def run() -> None:
        digest = save._saved_text_arrived(ls, ws, text)  # type: ignore[arg-type]  # didSave's text
        assert digest is not None
        await save._saved_text_checked(ls, ws, text, digest)  # type: ignore[arg-type]

    asyncio.run(run())
    assert published == [["near_tried", "bench_on_save_off"]], published
    del published[:], jobs.spawned[:]
    save.on_disk_change(ls, ws.root, {"kernel.py"})  # type: ignore[arg-type]  # the watcher's report of the save
    assert jobs.spawned == [] and published == [], (jobs.spawned, published)


class _TrustedJobs(_ProbingJobs):
    """Jobs.schedule_probe's rule: a save's probe only where saves are measured (trusted)."""

    def schedule_probe(self, ws: Any) -> None:
        if ws.settings.runs_on_save:
            self.probes += 1


def _watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, trusted: bool
) -> tuple[WorkspaceState, _Server]:
    """A workspace whose kernel.py holds `text` on disk, served with the watcher's hand-over
    made at once; saves measured when `trusted`."""
    (tmp_path / "kernel.py").write_bytes(text.encode())
    ws = WorkspaceState(tmp_path, object)  # type: ignore[arg-type]
    ws.settings = ws.settings.__class__(bench_on_save=True, trusted=trusted)
    assert ws.settings.runs_on_save == trusted
    state = ServerState()
    state.workspaces[ws.root] = ws
    monkeypatch.setattr(state, "on_loop", lambda callback: callback())  # (the watcher's thread hands over)
    monkeypatch.setattr(state, "rescan", lambda: None)  # (the folder is a workspace still)
    ls = _Server(state)
    ls.jobs = _TrustedJobs()
    return ws, ls


def _saved(ls: _Server, ws: WorkspaceState, text: str) -> None:
    """didSave's report of `text` (the buffer's), handled to its end."""
    asyncio.run(save.kernel_changed(ls, ws, text))  # type: ignore[arg-type]


@pytest.mark.parametrize("trusted", [False, True])
def test_a_late_watcher_report_of_a_save_leaves_the_buffers_verdict_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trusted: bool
) -> None:
    """A is saved, checked and published; the user types on and the buffer's check publishes
    B's verdict; then the watcher's report of A's save arrives (seconds later on a loaded
    machine). Before, untrusted: the last text checked was B, so A counted as a new save:
    [] published, then A's verdict, for a buffer showing B (and a second check of A)."""
    a, b = "A = 1\n", "B = 2\n"
    ws, ls = _watched(tmp_path, monkeypatch, a, trusted)
    _verdicts(monkeypatch)
    published = _publications(monkeypatch)
    _saved(ls, ws, a)
    asyncio.run(save.check(ls, ws, b))  # type: ignore[arg-type]  # did_change's check of the buffer
    assert published[-1] == ["near_tried"] and ws.notices_text == b, published
    del published[:], ls.jobs.spawned[:]
    save.on_disk_change(ls, ws.root, {"kernel.py"})  # type: ignore[arg-type]  # the late report of A
    assert ls.jobs.spawned == [] and published == [] and ws.notices_text == b, (ls.jobs.spawned, published)


def test_a_trusted_saved_text_that_does_not_parse_is_handled_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trusted: a saved text that does not parse is not measured, so no probe is scheduled
    and the numbers stay "stale". Before: the watcher's report of it counted as a new save,
    checked, parsed and published again (the rule was "untrusted", not "no probe will come")."""
    text = "def broken(:\n"
    ws, ls = _watched(tmp_path, monkeypatch, text, trusted=True)
    checked = _verdicts(monkeypatch)
    published = _publications(monkeypatch)
    _saved(ls, ws, text)
    assert ls.jobs.probes == 0 and checked == [text] and published, published
    del published[:], ls.jobs.spawned[:]
    save.on_disk_change(ls, ws.root, {"kernel.py"})  # type: ignore[arg-type]  # the watcher's report of the save
    assert ls.jobs.spawned == [] and published == [], (ls.jobs.spawned, published)


def test_a_report_arriving_while_the_saved_text_is_parsed_is_not_handled_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trusted: the watcher's report of the save arrives while the saved text is parsed on the
    pool, after its check and before its probe is scheduled. Before: the save's "check under
    way" mark was cleared before that parse, no probe was in flight yet and the numbers were
    stale, so the report was handled again (a second check, a second probe that cancels the
    first)."""
    text = "A = 1\n"
    ws, ls = _watched(tmp_path, monkeypatch, text, trusted=True)
    _verdicts(monkeypatch)
    _publications(monkeypatch)
    ls.on_parse = lambda: save.on_disk_change(ls, ws.root, {"kernel.py"})  # type: ignore[arg-type]
    _saved(ls, ws, text)
    assert ls.on_parse is None  # (the report arrived during the parse)
    assert ls.jobs.spawned == ["_check_static"] and ls.jobs.probes == 1, (ls.jobs.spawned, ls.jobs.probes)


@pytest.mark.parametrize("second", ["watcher", "didSave"])
def test_trust_granted_between_the_two_reports_of_a_save_measures_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second: str
) -> None:
    """Untrusted, a save handled (checked, published, not measured); the user trusts the
    workspace; the save's second report arrives (the watcher's, or didSave's after the
    watcher's). It was handled already: no check, no probe, nothing published; the text is
    measured at the next save or by Benchmark now. Before: the watcher's report measured it,
    or not, by when the grant came."""
    text = "A = 1\n"
    ws, ls = _watched(tmp_path, monkeypatch, text, trusted=False)
    checked = _verdicts(monkeypatch)
    published = _publications(monkeypatch)
    _saved(ls, ws, text)
    del published[:], checked[:], ls.jobs.spawned[:]
    ws.settings = ws.settings.__class__(bench_on_save=True, trusted=True)
    if second == "watcher":
        save.on_disk_change(ls, ws.root, {"kernel.py"})  # type: ignore[arg-type]
    else:
        _saved(ls, ws, text)
    assert ls.jobs.spawned == [] and ls.jobs.probes == 0 and checked == [] and published == [], (
        ls.jobs.spawned,
        checked,
        published,
    )


@pytest.mark.parametrize("buffer_bom", [False, True])
def test_the_watchers_report_of_a_saved_file_with_a_byte_order_mark_is_the_same_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, buffer_bom: bool
) -> None:
    """A UTF-8 kernel.py starting with a byte order mark (written on Windows): editors drop
    it from the buffer (VS Code keeps it as the file's encoding, "UTF-8 with BOM"), so
    didSave's text has none, and the watcher then reads the file's bytes, which do. Before:
    two texts for one save: the watcher's report was checked again and, trusted, measured
    a second time (its probe cancelling the first). A buffer that keeps the mark is the same
    text too: Python reads neither with it (protocol/text_positions.py)."""
    buffer = "A = 1\nB = 2\n"
    ws, ls = _watched(tmp_path, monkeypatch, "\ufeff" + buffer, trusted=True)
    assert (tmp_path / "kernel.py").read_bytes().startswith(b"\xef\xbb\xbf")
    _verdicts(monkeypatch)
    published = _publications(monkeypatch)
    _saved(ls, ws, "\ufeff" + buffer if buffer_bom else buffer)  # didSave's text
    assert published[-1] == ["near_tried"] and ls.jobs.probes == 1, published
    del published[:], ls.jobs.spawned[:]
    save.on_disk_change(ls, ws.root, {"kernel.py"})  # type: ignore[arg-type]  # the watcher's report of the save
    assert ls.jobs.spawned == [] and published == [] and ls.jobs.probes == 1, (ls.jobs.spawned, published)
