"""The daemon's seams, through a real LSP client (pytest-lsp): one command and job vocabulary
(start answer, progress, jobFinished and schema agree), Cancel on a job's progress stops it
(benchmark, iteration, restart), a command waiting on the workspace lock does not hold up
lenses and hover, and clients can ask which folders are optimization workspaces."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidRequest, JsonRpcRequestCancelled
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from kernelscope.daemon.engine.memory.atomic_io import ITERATION_LOCK_NAME, LOCK_NAME, workspace_lock
from kernelscope.daemon.engine.memory.records import MemoryManager
from kernelscope.protocol.vocabulary import COMMANDS, JOB_KINDS
from tests.conftest import EXAMPLES, NO_TORCH_SERVER, REPO_ROOT
from tests.support.bench_fixtures import EVADING, alive_with, jobs_folder
from tests.support.locks import held_on_a_thread
from tests.support.lsp_client import KernelscopeClient, _as_dict, make_client, start_session, wait_for
from tests.support.stdio_client import StdioClient

if TYPE_CHECKING:
    from kernelscope.daemon.lsp.language_server import KernelscopeServer

pytestmark = pytest.mark.slow
SERVER = NO_TORCH_SERVER
JOBS, DAEMON_ENV = jobs_folder()  # the daemons' TMPDIR: what their jobs' processes carry


def test_commands_json_is_current() -> None:
    """editor-clients/commands.json is what `kernelscope schema --commands` writes."""
    from kernelscope.daemon.cli.serve import commands_document
    from kernelscope.protocol.lsp import COMMAND_MODELS, JOB_RESULTS

    on_disk = json.loads((REPO_ROOT / "editor-clients" / "commands.json").read_text())
    assert on_disk == commands_document(), (
        "regenerate: kernelscope schema --commands > editor-clients/commands.json"
    )
    assert set(COMMAND_MODELS) == set(COMMANDS) and set(JOB_RESULTS) == set(JOB_KINDS)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "folder"
    shutil.copytree(EXAMPLES / "vector_add", root / "kernel_opt_vector_add")
    subprocess.run(["git", "init", "-q"], cwd=root / "kernel_opt_vector_add", check=True)
    # A workspace with a README block and no memory/ yet: the server says it is one.
    fresh = root / "kernel_opt_new"
    fresh.mkdir()
    shutil.copy(EXAMPLES / "vector_add" / "kernel.py", fresh / "kernel.py")
    (fresh / "README.md").write_text('# new\n\n```kernelscope\n{"target": {"platform": "H100"}}\n```\n')
    return root


@pytest_lsp.fixture(
    params=["visual_studio_code", "neovim"],
    config=ClientServerConfig(client_factory=make_client, server_command=SERVER, server_env=DAEMON_ENV),
)
async def client(lsp_client: KernelscopeClient, request: pytest.FixtureRequest, folder: Path, tmp_path: Path):
    lsp_client.folder = folder
    lsp_client.finished = []

    @lsp_client.feature("kernelscope/jobFinished")
    def on_finished(*args: object) -> None:
        lsp_client.finished.append(_as_dict(args[-1]))

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def on_refresh(params: None) -> None:
        return None

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def on_inlay_refresh(params: None) -> None:
        return None

    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(request.param),
            workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name="folder")],
            initialization_options={
                "kernelscope": {
                    "dbUrl": str(tmp_path / "exp.sqlite"),
                    "trusted": True,
                    "mode": "interpreter",
                    "seeds": 1,
                    "benchOnSave": False,
                    "agent": f"{sys.executable} -c \"import time; print('thinking', flush=True); time.sleep(300)\"",
                }
            },
            process_id=None,
        )
    )
    lsp_client.capabilities_result = result  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    config=ClientServerConfig(client_factory=make_client, server_command=SERVER, server_env=DAEMON_ENV)
)
async def bare_client(lsp_client: KernelscopeClient):
    """A client the test sets up itself (its own handlers, then initialize)."""
    yield


def ws_of(client: KernelscopeClient) -> Path:
    return client.folder / "kernel_opt_vector_add"


async def command(client: LanguageClient, name: str, params: dict) -> object:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=[params])
    )


async def test_executed_commands_are_the_vocabulary(client: KernelscopeClient) -> None:
    provider = client.capabilities_result.capabilities.execute_command_provider  # type: ignore[attr-defined]
    assert provider is not None and set(provider.commands) == set(COMMANDS)


async def test_workspaces_request(client: KernelscopeClient) -> None:
    answer = await client.protocol.send_request_async("kernelscope/workspaces", {})
    found = {Path(entry.workspace).name for entry in answer.workspaces}
    assert found == {"kernel_opt_vector_add", "kernel_opt_new"}


@pytest.mark.parametrize("job", ["benchmark", "runIteration", "restart"])
async def test_cancel_on_progress_stops_the_job(client: KernelscopeClient, job: str) -> None:
    """Cancel on the job's progress (window/workDoneProgress/cancel): the job's process group
    is killed, the job ends `cancelled` with the kind its start answer gave, the lens says so."""
    ws = ws_of(client)
    (ws / "kernel.py").write_text(EVADING["hang"])  # past the static gate: it must run
    name = {"benchmark": "kernelscope.benchmark", "runIteration": "kernelscope.runIteration"}.get(
        job, "kernelscope.restart"
    )
    params: dict = {"workspace": str(ws)}
    if job == "restart":
        params["seed"] = 1
    started = await command(client, name, params)
    assert started["kind"] == job  # type: ignore[index]
    token = f"kernelscope-{started['job_id']}"  # type: ignore[index]
    await wait_for(lambda: token in client.progress_reports, timeout=30)
    await asyncio.sleep(2.0)  # the child is running (a hanging kernel, or the agent)
    cancelled_at = time.monotonic()
    client.protocol.notify("window/workDoneProgress/cancel", types.WorkDoneProgressCancelParams(token=token))
    await wait_for(lambda: bool(client.finished), timeout=20)
    elapsed = time.monotonic() - cancelled_at
    finished = client.finished[0]
    assert finished["kind"] == job and finished["jobId"] == started["job_id"] and finished["cancelled"]  # type: ignore[index]
    assert elapsed < 10, elapsed  # "within a second or two" here; generous on a shared machine
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=(ws / "kernel.py").as_uri()))
    )
    assert any(lens.command and lens.command.title == f"{job} cancelled" for lens in lenses or [])
    assert alive_with(JOBS) == []
    assert not (ws / "memory" / "v5.json").exists()  # a cancelled iteration records nothing


async def test_a_second_job_is_refused_while_the_users_first_runs(client: KernelscopeClient) -> None:
    """Restart clicked twice (its agent still working): the second is refused, naming the job
    under way, and the first runs on; before, the second cancelled the first's agent and masked
    half of the memory again (two halves hidden)."""
    ws = ws_of(client)

    def masked() -> list[str]:
        return sorted(
            p.name for p in (ws / "memory").glob("v*.json") if json.loads(p.read_text()).get("masked")
        )

    started = await command(client, "kernelscope.restart", {"workspace": str(ws), "seed": 1})
    await wait_for(lambda: bool(masked()), timeout=30, message="the restart masked nothing")
    first = masked()
    for name in ("kernelscope.restart", "kernelscope.runIteration", "kernelscope.benchmark"):
        with pytest.raises(Exception, match=f"restart \\(job {started['job_id']}\\) is already running"):  # type: ignore[index]
            await command(client, name, {"workspace": str(ws)})
    assert client.finished == []  # the first runs on
    assert masked() == first
    await command(client, "kernelscope.cancel", {"workspace": str(ws)})
    await wait_for(lambda: bool(client.finished), timeout=30)


async def test_mask_half_is_refused_while_the_users_iteration_runs(client: KernelscopeClient) -> None:
    """maskHalf during the daemon's own iteration in the workspace: it masked, and the
    iteration, overtaken by a mask-half, was refused at its end with its measurement lost.
    It is now refused up front, as a second job is, naming the iteration; memory unchanged
    (a dry run, which writes nothing, still answers)."""
    ws = ws_of(client)
    (ws / "kernel.py").write_text(EVADING["hang"])  # past the static gate: it measures until cancelled
    before = {p.name: p.read_bytes() for p in (ws / "memory").iterdir()}
    started = await command(client, "kernelscope.runIteration", {"workspace": str(ws), "actionCategory": "x"})
    await wait_for(lambda: f"kernelscope-{started['job_id']}" in client.progress_reports, timeout=30)  # type: ignore[index]
    running = f"runIteration \\(job {started['job_id']}\\) is already running"  # type: ignore[index]
    for params in ({"seed": 1}, {"seed": 1, "confirm": True}):
        with pytest.raises(Exception, match=running):
            await command(client, "kernelscope.maskHalf", {"workspace": str(ws), **params})
    dry = await command(client, "kernelscope.maskHalf", {"workspace": str(ws), "seed": 1, "dryRun": True})
    assert dry["dry_run"] and client.finished == []  # type: ignore[index]
    assert {p.name: p.read_bytes() for p in (ws / "memory").iterdir()} == before
    await command(client, "kernelscope.cancel", {"workspace": str(ws)})
    await wait_for(lambda: bool(client.finished), timeout=30)


def _held_open_elsewhere(path: Path) -> bool:
    """Whether a process other than this one has `path` open (the daemon waiting for a lock)."""
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        if fd_dir.parent.name == str(os.getpid()):
            continue
        try:
            if any(os.readlink(fd) == str(path) for fd in fd_dir.iterdir()):
                return True
        except OSError:  # gone, or not ours to read
            continue
    return False


async def test_a_job_asked_for_while_a_mask_half_waits_to_write_is_refused(client: KernelscopeClient) -> None:
    """maskHalf passed its busy check on a worker thread and waits for the iteration lock
    (another process's iteration writes); runIteration asked for meanwhile (another client)
    passed the same check, since the mask-half was not registered anywhere, and started: two
    writes the one-job rule keeps apart ran at once (the iteration, overtaken by the mask,
    recorded nothing at its end). The check and the registration are one step: the iteration
    is refused, naming the mask-half, and the mask-half masks once the lock is free."""
    ws = ws_of(client)
    lock_dir = MemoryManager(ws).lock_dir
    with held_on_a_thread(lambda: workspace_lock(lock_dir, name=ITERATION_LOCK_NAME)):
        mask = asyncio.ensure_future(
            command(client, "kernelscope.maskHalf", {"workspace": str(ws), "seed": 1})
        )
        await wait_for(
            lambda: _held_open_elsewhere(lock_dir / ITERATION_LOCK_NAME),
            timeout=30,
            message="the mask-half never waited for the iteration lock",
        )
        for name in ("kernelscope.runIteration", "kernelscope.restart", "kernelscope.maskHalf"):
            with pytest.raises(Exception, match="a maskHalf is already running"):
                await command(client, name, {"workspace": str(ws)})
    result = await asyncio.wait_for(mask, 30)
    assert result["masked"]  # type: ignore[index]
    assert client.finished == []  # no job started
    dry = await command(client, "kernelscope.maskHalf", {"workspace": str(ws), "seed": 1, "dryRun": True})
    assert dry["dry_run"]  # type: ignore[index]


def test_shutdown_cancels_the_job_under_way(folder: Path, tmp_path: Path) -> None:
    """The editor shuts the daemon down while a benchmark hangs: the job is cancelled (its
    process group killed), its end reaches the client and exit ends the daemon, instead of
    the daemon running on, and not exiting, until the job's own timeout (a restart's agent
    went on writing into the workspace after the editor had gone)."""
    ws = folder / "kernel_opt_vector_add"
    (ws / "kernel.py").write_text(EVADING["hang"])
    pipe = StdioClient(SERVER, env=DAEMON_ENV, log=tmp_path / "server.log")
    try:
        options = {"dbUrl": str(tmp_path / "exp.sqlite"), "trusted": True, "mode": "interpreter"}
        pipe.initialize(folder, {**options, "seeds": 1, "benchOnSave": False})
        command = {"command": "kernelscope.benchmark", "arguments": [{"workspace": str(ws)}]}
        started = pipe.request(1, "workspace/executeCommand", command)["result"]
        deadline = time.monotonic() + 60
        while not alive_with(JOBS) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alive_with(JOBS), "the benchmark never started"
        assert pipe.request(2, "shutdown", None)["result"] is None
        finished = pipe.wait(lambda m: m.get("method") == "kernelscope/jobFinished", timeout=30)["params"]
        assert finished["jobId"] == started["job_id"] and finished["cancelled"]
        pipe.send({"jsonrpc": "2.0", "method": "exit"})
        assert pipe.process.wait(timeout=30) == 0
        assert alive_with(JOBS) == []
    finally:
        pipe.process.kill()


@pytest.mark.parametrize(("shutdown_first", "status"), [(True, 0), (False, 1)])
def test_exit_status_says_whether_shutdown_came_first(
    tmp_path: Path, shutdown_first: bool, status: int
) -> None:
    """LSP 3.17: after `exit` the server's status is 0 when a shutdown request came first, else
    1 (the editor dropped it mid-session); the daemon exited 0 either way."""
    pipe = StdioClient(SERVER, env=DAEMON_ENV, log=tmp_path / "server.log")
    try:
        pipe.initialize(tmp_path, {"dbUrl": str(tmp_path / "exp.sqlite")})
        if shutdown_first:
            assert pipe.request(1, "shutdown", None)["result"] is None
        pipe.send({"jsonrpc": "2.0", "method": "exit"})
        assert pipe.process.wait(timeout=30) == status
    finally:
        pipe.process.kill()


def _workspace_files(ws: Path) -> dict[str, bytes]:
    """Every file of a workspace's work tree and its git history's refs (what a write changes)."""
    files = {
        str(p.relative_to(ws)): p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git" not in p.parts
    }
    head = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=ws, capture_output=True, text=True
    )
    return {**files, "HEAD": head.stdout.encode()}


@pytest.mark.parametrize("released", ["after shutdown", "after exit"])
async def test_shutdown_with_a_command_pending(
    bare_client: KernelscopeClient, folder: Path, tmp_path: Path, released: str
) -> None:
    """`shutdown` while a command waits on the command pool (maskHalf, for the memory lock that
    another process holds): the shutdown is answered null, the pending command
    RequestCancelled, a later request InvalidRequest, and exit ends the daemon with 0. pygls
    2.1.1 answered this shutdown InternalError ("dictionary changed size during iteration",
    daemon/lsp/rpc.py `lsp_shutdown`) and, its shutdown never recorded, served later requests.
    The command gives up when the session ends: the lock freed after the shutdown, it masked
    nothing (it masked half of the memory after the editor had gone); still held, exit ends the
    daemon at once (it waited for the lock's 60 s timeout, the interpreter joining the pool)."""
    client = bare_client
    server = client._server
    assert server is not None
    await start_session(client, folder, {"dbUrl": str(tmp_path / "exp.sqlite"), "benchOnSave": False})
    ws = folder / "kernel_opt_vector_add"
    lock_dir = MemoryManager(ws).lock_dir
    before = _workspace_files(ws)
    try:
        with contextlib.ExitStack() as lock:
            lock.enter_context(held_on_a_thread(lambda: workspace_lock(lock_dir)))
            params = {"workspace": str(ws), "seed": 1}
            mask = asyncio.ensure_future(command(client, "kernelscope.maskHalf", params))
            await wait_for(
                lambda: _held_open_elsewhere(lock_dir / LOCK_NAME),
                timeout=30,
                message="the mask-half never waited for the memory lock",
            )
            assert await client.shutdown_async(None) is None
            with pytest.raises(JsonRpcRequestCancelled):
                await asyncio.wait_for(mask, 30)
            with pytest.raises(JsonRpcInvalidRequest, match="shut down"):
                await command(client, "kernelscope.topExperiments", {})
            if released == "after shutdown":
                lock.close()
            client.exit(None)
            assert await asyncio.wait_for(server.wait(), 15) == 0
        assert _workspace_files(ws) == before
    finally:
        if server.returncode is None:  # (a failure above: the fixture's teardown waits for the daemon's end)
            server.kill()


def test_every_request_is_answered(tmp_path: Path) -> None:
    """A request whose params do not fit its method is answered InvalidParams naming what is
    wrong (pygls answered nothing: the client waited forever), and a command's refused
    arguments too, each logged in one line, not a traceback; after shutdown, a request (a
    second shutdown included) is answered InvalidRequest, as LSP 3.17 asks (pygls dropped it)."""
    log = tmp_path / "server.log"
    pipe = StdioClient(SERVER, env=DAEMON_ENV, log=log)
    try:
        pipe.initialize(tmp_path, {"dbUrl": str(tmp_path / "exp.sqlite")})
        hover = pipe.request(1, "textDocument/hover", {"textDocument": {"uri": (tmp_path / "k.py").as_uri()}})
        assert hover["error"]["code"] == -32602 and "position" in hover["error"]["message"], hover
        bad = {"command": "kernelscope.topExperiments", "arguments": [{"maxResults": "many"}]}
        command = pipe.request(2, "workspace/executeCommand", bad)
        assert command["error"]["code"] == -32602 and "maxResults" in command["error"]["message"], command
        assert pipe.request(3, "shutdown", None)["result"] is None
        for request_id, method in ((4, "shutdown"), (5, "textDocument/codeLens")):
            late = pipe.request(request_id, method, {"textDocument": {"uri": "file:///k.py"}}, timeout=10)
            assert late["error"]["code"] == -32600, late
        pipe.send({"jsonrpc": "2.0", "method": "exit"})
        assert pipe.process.wait(timeout=30) == 0
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    finally:
        pipe.process.kill()


async def test_a_command_waiting_on_the_lock_does_not_block_lenses(client: KernelscopeClient) -> None:
    """The workspace's memory lock held for 10 s by another process's write: mask-half waits
    for it on a worker thread while lenses and hover keep answering."""
    ws = ws_of(client)
    uri = (ws / "kernel.py").as_uri()
    with held_on_a_thread(lambda: workspace_lock(MemoryManager(ws).lock_dir), hold_s=10):
        mask = asyncio.ensure_future(
            command(client, "kernelscope.maskHalf", {"workspace": str(ws), "seed": 1})
        )
        await wait_for(
            lambda: _held_open_elsewhere(MemoryManager(ws).lock_dir / LOCK_NAME),
            timeout=30,
            message="the mask-half never waited for the memory lock",
        )
        slowest = 0.0
        for _ in range(10):
            began = time.monotonic()
            lenses = await client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            hover = await client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(line=8, character=6),
                )
            )
            slowest = max(slowest, time.monotonic() - began)
            assert lenses and hover is not None
            await asyncio.sleep(0.3)
        assert not mask.done()  # still waiting for the lock
        assert slowest < 2.0, slowest
    result = await asyncio.wait_for(mask, 30)
    assert result["seed"] == 1  # type: ignore[index]


@pytest.mark.parametrize("answer", ["never", "garbage"])
async def test_a_client_that_answers_progress_badly_does_not_stall_jobs(
    bare_client: LanguageClient, folder: Path, tmp_path: Path, answer: str
) -> None:
    """window/workDoneProgress/create never answered (or answered with garbage): the job runs
    (without progress, or with it) and still finishes."""
    lsp_client = bare_client
    release = asyncio.Event()
    lsp_client.protocol.fm.features.pop(types.WINDOW_WORK_DONE_PROGRESS_CREATE, None)

    @lsp_client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    async def create(params: types.WorkDoneProgressCreateParams) -> object:
        if answer == "garbage":
            return {"not": "null"}  # the answer must be null
        await release.wait()
        return None

    finished: list = []

    @lsp_client.feature("kernelscope/jobFinished")
    def on_finished(*args: object) -> None:
        finished.append(_as_dict(args[-1]))

    for method in (types.WORKSPACE_CODE_LENS_REFRESH, types.WORKSPACE_INLAY_HINT_REFRESH):
        lsp_client.feature(method)(lambda params: None)
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual_studio_code"),
            workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name="folder")],
            initialization_options={
                "kernelscope": {
                    "dbUrl": str(tmp_path / "exp.sqlite"),
                    "trusted": True,
                    "mode": "interpreter",
                    "seeds": 1,
                }
            },
            process_id=None,
        )
    )
    try:
        ws = folder / "kernel_opt_vector_add"
        started = await command(lsp_client, "kernelscope.benchmark", {"workspace": str(ws)})
        await wait_for(lambda: bool(finished), timeout=120)
        assert finished[0]["jobId"] == started["job_id"] and finished[0]["result"]["passed"]  # type: ignore[index]
    finally:
        release.set()
        await asyncio.sleep(0.1)
        await lsp_client.shutdown_session()


def _server_over_example(tmp_path: Path) -> tuple[KernelscopeServer, Path]:
    """An in-process server (no client) over a copy of the vector-add workspace, set up as
    `initialize` sets it up; the server and the workspace."""
    from pygls.workspace import Workspace

    from kernelscope.daemon.lsp.language_server import KernelscopeServer

    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    server = KernelscopeServer()
    server.protocol._workspace = Workspace(tmp_path.as_uri())  # what `initialize` sets up
    server.state.folders = [tmp_path.resolve()]
    server.state.rescan()
    return server, ws


def test_a_lens_request_reads_no_file_on_the_loop(tmp_path: Path) -> None:
    """The loop only snapshots: for a kernel.py the editor has not opened, the snapshot holds
    no text and the lens handler (on the pool) never asks for it; hover and hints read the
    file there, as it is on disk."""
    from kernelscope.daemon.lsp.features import lenses

    server, ws = _server_over_example(tmp_path)
    uri = (ws / "kernel.py").as_uri()
    doc = server.document(uri)
    assert doc is not None and doc.buffer is None
    found = lenses.code_lens(doc, None)  # type: ignore[arg-type]
    assert len(found) > 1 and "text" not in doc.__dict__  # cached_property: never computed
    assert doc.text == (ws / "kernel.py").read_text()  # what hover and hints get, read on the pool
    assert server.document((ws / "README.md").as_uri()) is None


def test_opening_kernel_py_reads_what_the_lenses_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """didOpen's warm-up (on the pool) reads memory/, the README and the store's digest that the
    lenses show, so the editor's first lens request, a moment later, reads none of them."""
    from kernelscope.daemon.lsp.features import lenses
    from kernelscope.daemon.lsp.features.save import warm_workspace

    server, ws = _server_over_example(tmp_path)
    doc = server.document((ws / "kernel.py").as_uri())
    assert doc is not None
    warm_workspace(doc.view.cache)

    def no_read(*_: object) -> None:
        raise AssertionError("the lens request read memory/ again")

    monkeypatch.setattr(doc.view.cache.memory_manager, "scan", no_read)
    monkeypatch.setattr(doc.view.cache.workspace, "readme", no_read)
    found = lenses.code_lens(doc, None)  # type: ignore[arg-type]
    titles = [lens.command.title for lens in found if lens.command]
    assert any(title.startswith("best 1.22x v4") for title in titles), titles


def test_the_daemon_sends_no_json_that_holds_nan_or_infinity() -> None:
    """pygls wrote a float('inf') in an answer as `Infinity`, which Node's JSON.parse (VS
    Code's client) rejects, losing the message. A NaN or Infinity goes out as null, in an
    answer and in a notification alike, the rest of the message intact."""
    from kernelscope.daemon.lsp.language_server import KernelscopeServer

    class Writer:
        def __init__(self) -> None:
            self.sent: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.sent.append(data)

        def close(self) -> None:
            pass

    protocol = KernelscopeServer().protocol
    writer = Writer()
    protocol.set_writer(writer)

    def bodies() -> list[dict]:
        found = [json.loads(data.split(b"\r\n\r\n", 1)[1]) for data in writer.sent]
        writer.sent.clear()
        return found

    protocol._send_response(7, {"score": float("inf"), "runs": [1.0, float("-inf")], "name": "é"})
    assert bodies() == [
        {"id": 7, "jsonrpc": "2.0", "result": {"score": None, "runs": [1.0, None], "name": "é"}}
    ]
    protocol.notify("kernelscope/jobFinished", {"score": float("nan"), "job": "j1"})
    [note] = bodies()
    assert note["method"] == "kernelscope/jobFinished" and note["params"] == {"score": None, "job": "j1"}
    protocol._send_response(8, {"score": 1.5, "name": "é"})
    assert bodies() == [{"id": 8, "jsonrpc": "2.0", "result": {"score": 1.5, "name": "é"}}]
