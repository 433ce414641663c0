"""What pool threads hand to the event loop (daemon/lsp/state.py: the live state changes on the
loop only): a job's progress, and the rescan a command asks for when it names a workspace made
since the last scan."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path
from typing import Any

from kernelscope.daemon.lsp import notify
from kernelscope.daemon.lsp.features.commands import Commands
from kernelscope.daemon.lsp.jobs import Jobs
from kernelscope.daemon.lsp.state import Job, ServerState, WorkspaceState
from tests.conftest import EXAMPLES


class _Server:
    client_capabilities = None  # no $/progress: the report is the live state alone


def test_a_jobs_progress_is_written_on_the_loop(tmp_path: Path, monkeypatch: Any) -> None:
    """The benchmark's thread reports "n of m configs": the job's fields change on the loop,
    both at once, so a lens made on the loop never reads one without the other."""
    state = ServerState()
    ws = WorkspaceState(tmp_path, object)  # type: ignore[arg-type]
    job = Job("j", tmp_path, "benchmark")
    seen: list[tuple[str, int, int]] = []
    monkeypatch.setattr(
        notify,
        "workspace_changed",
        lambda ls, changed, *sources: seen.append(
            (threading.current_thread().name, job.done_configs, job.total_configs)
        ),
    )
    report = Jobs(_Server(), state)._on_configs(ws, job, "token")  # type: ignore[arg-type]

    async def run() -> None:
        state.loop = asyncio.get_running_loop()
        reporter = threading.Thread(target=report, args=(3, 8), name="kernelscope-bench")
        reporter.start()
        reporter.join()
        assert (job.done_configs, job.total_configs) == (0, 0)  # not yet: the loop writes them
        await asyncio.sleep(0.05)

    asyncio.run(run())
    assert seen == [(threading.main_thread().name, 3, 8)]


def test_a_command_naming_a_new_workspace_has_the_loop_find_it(tmp_path: Path) -> None:
    """A command on the pool names a workspace created after the last scan (an agent's
    `kernelscope demo`): the search that finds it (`discover`, a climb from the named folder)
    runs on the loop, which owns the list of workspaces, and the command gets the workspace it
    found."""
    state = ServerState()
    state.set_folders([tmp_path])
    assert state.workspaces == {}
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    scans: list[str] = []
    discover = state.discover

    def recorded(path: Path) -> WorkspaceState | None:
        scans.append(threading.current_thread().name)
        return discover(path)

    state.discover = recorded  # type: ignore[method-assign]
    commands = Commands(object(), state, object())  # type: ignore[arg-type]
    found: list[WorkspaceState] = []

    async def run() -> None:
        state.loop = asyncio.get_running_loop()
        await asyncio.to_thread(lambda: found.append(commands._workspace(str(ws))))

    asyncio.run(run())
    assert scans == [threading.main_thread().name]
    assert [w.root for w in found] == [ws.resolve()] and ws.resolve() in state.workspaces


def test_a_jobs_progress_reads_alike_in_the_lens_and_the_report(tmp_path: Path, monkeypatch: Any) -> None:
    """`3/8 configs` in the client's $/progress report and in the lens above the file (one
    text, views/lens_text.configs_text); before the harness has said how many, `1 config`
    (was `1 configs`)."""
    from kernelscope.daemon.engine.views.lens_text import job_text

    state = ServerState()
    jobs = Jobs(_Server(), state)  # type: ignore[arg-type]
    reported: list[str | None] = []
    monkeypatch.setattr(
        jobs, "_progress", lambda token, kind, title, message=None, **_: reported.append(message)
    )
    job = Job("j", tmp_path, "benchmark")
    jobs._on_configs(WorkspaceState(tmp_path, object), job, "token")(3, 8)  # type: ignore[arg-type]
    assert reported == ["3/8 configs"] and job_text("benchmark", 3, 8) == "benchmark: 3/8 configs"
    assert job_text("benchmark", 1, 0) == "benchmark: 1 config"
    assert job_text("benchmark", 0, 0) == "benchmark: 0 configs"
