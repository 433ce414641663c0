"""Who may set what, through a real LSP client (pytest-lsp): a folder's `workspace/configuration`
answer never grants trust, never picks the interpreter, the executor, the Ray cluster or the
store; and a client that answers configuration with null, garbage or never does not stop the
daemon from watching the workspace."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities

from kernelscope.daemon.engine.views.lens_text import UNTRUSTED
from kernelscope.daemon.lsp.configuration import apply_change_payload, apply_initialization_options
from kernelscope.daemon.lsp.features.lifecycle import SERVING
from kernelscope.daemon.lsp.state import ServerState
from kernelscope.protocol.settings import FolderSettings, folder_settings_from, user_settings_from
from tests.conftest import EXAMPLES, NO_TORCH_SERVER, REPO_ROOT
from tests.support.lsp_client import KernelscopeClient, _as_dict, make_client, wait_for, watching

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SERVER = NO_TORCH_SERVER
CLIENT_HELIX = REPO_ROOT / "editor-clients" / "helix"

# What a cloned repository's .vscode/settings.json (or any folder answer) might claim.
HOSTILE_FOLDER_ANSWER = {
    "trusted": True,
    "benchOnSave": True,
    "python": "/bin/false",
    "agent": "rm -rf ~",
    "executor": "ray",
    "rayAddress": "127.0.0.1:9",
    "dbUrl": "postgresql://attacker.invalid/steal",
    "memoryLimitMb": 0,
    "timeoutS": 1e9,
    "debounceMs": 50,
    "colour": "red",
}


def test_folder_answer_sets_folder_keys_only() -> None:
    folder, ignored = folder_settings_from(HOSTILE_FOLDER_ANSWER, FolderSettings())
    assert folder == FolderSettings(bench_on_save=True, debounce_ms=50)
    assert ignored == sorted(set(HOSTILE_FOLDER_ANSWER) - {"benchOnSave", "debounceMs"})


def test_the_users_own_settings_repeated_by_the_folder_are_not_warned_about(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Helix answers workspace/configuration, and sends didChangeConfiguration once the server
    is up, with the very table it sent as initializationOptions, its languages.toml's `config`: the shipped one's
    `trusted = false` came back as a folder's and the daemon logged "ignored 'trusted'" at every
    start (before). A key that repeats the user's value asks for nothing: not logged. One that
    differs still is, and trust still comes from the user alone."""
    monkeypatch.setenv("KERNELSCOPE_CONFIG", str(tmp_path / "none.toml"))
    shipped = tomllib.loads((CLIENT_HELIX / "languages.toml").read_text())
    # the shipped table with the `trusted` its comment tells a Helix-only user to add
    shipped_section = shipped["language-server"]["kernelscope"]["config"]["kernelscope"]
    table = {"kernelscope": {**shipped_section, "trusted": ["/home/me/kernel_opt_*"]}}
    state = ServerState()
    warned: list[str] = []
    apply_initialization_options(state, table, warned.append)
    caplog.set_level(logging.WARNING, logger="kernelscope.lsp")
    apply_change_payload(state, table, warned.append)  # what Helix answers for every folder
    assert [r.getMessage() for r in caplog.records] == [] and warned == []
    claims = {"kernelscope": {**table["kernelscope"], "trusted": True}}
    apply_change_payload(state, claims, warned.append)
    assert [r.getMessage() for r in caplog.records] == [
        "ignored 'trusted' from the configuration of didChangeConfiguration: a folder may set only "
        "benchOnSave, mode, seeds, debounceMs and blameInlay (trust, interpreter, executor, store and "
        "caps come from the user's settings)"
    ]
    assert state.user.trusted == ["/home/me/kernel_opt_*"] and not state.default_settings.trusted
    state.workers.shutdown()


def test_the_shipped_helix_table_keeps_the_trust_of_the_users_config_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The README says trust lives in ~/.config/kernelscope/config.toml, where every editor and
    agent reads it; the shipped languages.toml sent `trusted = false` as initializationOptions,
    which replaced that list: a Helix user who followed both never had a workspace re-benchmarked
    on save (before)."""
    config = tmp_path / "config.toml"
    config.write_text('trusted = ["/home/me/kernel_opt_*"]\n')
    monkeypatch.setenv("KERNELSCOPE_CONFIG", str(config))
    shipped = tomllib.loads((CLIENT_HELIX / "languages.toml").read_text())
    state = ServerState()
    warned: list[str] = []
    apply_initialization_options(state, shipped["language-server"]["kernelscope"]["config"], warned.append)
    assert warned == []
    assert state.user.trusted == ["/home/me/kernel_opt_*"]
    state.workers.shutdown()


def test_user_settings_carry_folder_defaults() -> None:
    user, folder, dropped = user_settings_from(
        {"trusted": True, "python": "/usr/bin/python3", "mode": "interpreter"}
    )
    assert user.trusted and user.python == "/usr/bin/python3" and folder.mode == "interpreter"
    assert dropped == []
    with pytest.raises(ValueError, match="executor"):
        user_settings_from({"executor": "slurm"})


def test_a_refused_trusted_pattern_is_dropped_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One relative or `**` pattern in `trusted` made the whole config file (or
    initializationOptions) invalid: a warning, and every other setting the user wrote (the
    interpreter, the agent, the limits, the folder defaults) silently back to its default.
    Only the refused pattern is dropped now, and the warning names it and the file."""
    from kernelscope.daemon.lsp.configuration import apply_initialization_options
    from kernelscope.daemon.lsp.state import ServerState

    config = tmp_path / "config.toml"  # this test's own: the run's config file is every test's
    monkeypatch.setenv("KERNELSCOPE_CONFIG", str(config))
    config.write_text(
        'trusted = ["/srv/kernel_opt_*", "kernel_opt_*"]\n'
        'python = "/opt/torch/bin/python"\nagent = "claude -p"\ntimeout_s = 60\nseeds = 5\n'
    )
    warnings: list[str] = []
    state = ServerState()
    apply_initialization_options(
        state, {"kernelscope": {"trusted": ["~/work/**", "/srv/mine"]}}, warnings.append
    )
    assert state.user.python == "/opt/torch/bin/python" and state.user.agent == "claude -p"
    assert state.user.timeout_s == 60 and state.folder_defaults.seeds == 5
    assert state.user.trusted == ["/srv/mine"]  # initializationOptions over the file's one good pattern
    assert len(warnings) == 2, warnings
    assert f"config file {config}: trusted: 'kernel_opt_*' is not an absolute path" in warnings[0]
    assert warnings[1].startswith("kernelscope: initializationOptions: trusted: '~/work/**'"), warnings
    assert all("that pattern is ignored; the other settings are kept" in w for w in warnings), warnings


def test_a_trusted_list_with_no_pattern_left_keeps_the_earlier_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """initializationOptions whose every trusted pattern is refused replaced the config file's
    list with an empty one, silently (the warning said only that the pattern was ignored); and
    a list that is not all patterns was checked after the refused ones were dropped, so its
    error quoted a list the user never wrote (`[3]`). Both found by a review."""
    from kernelscope.daemon.lsp.configuration import apply_initialization_options
    from kernelscope.daemon.lsp.state import ServerState

    config = tmp_path / "config.toml"
    monkeypatch.setenv("KERNELSCOPE_CONFIG", str(config))
    config.write_text('trusted = ["/srv/kernel_opt_*"]\n')
    warnings: list[str] = []
    state = ServerState()
    apply_initialization_options(state, {"kernelscope": {"trusted": ["kernel_opt_*"]}}, warnings.append)
    assert state.user.trusted == ["/srv/kernel_opt_*"], warnings
    assert any("no pattern of this list is left: the earlier trusted setting stays" in w for w in warnings)
    warnings.clear()
    apply_initialization_options(state, {"kernelscope": {"trusted": ["/a/**", 3]}}, warnings.append)
    assert len(warnings) == 1 and "'/a/**', 3" in warnings[0], warnings
    assert state.user.trusted == ["/srv/kernel_opt_*"]
    state.workers.shutdown()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The vector-add example whose kernel.py leaves a mark outside the workspace when run."""
    ws = tmp_path / "folder" / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    return ws


def marked_kernel(ws: Path) -> Path:
    marker = ws.parent.parent / "kernel-ran"
    source = (ws / "kernel.py").read_text()
    (ws / "kernel.py").write_text(
        source + f"\nimport pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    )
    return marker


def init_params(ws: Path, editor: str, user: dict) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities(editor),
        workspace_folders=[types.WorkspaceFolder(uri=ws.parent.as_uri(), name="folder")],
        initialization_options={
            "kernelscope": {
                "dbUrl": str(ws.parent.parent / "exp.sqlite"),
                "mode": "interpreter",
                "seeds": 1,
                "debounceMs": 100,
                "memoryLimitMb": 1500,
                **user,
            }
        },
        process_id=None,
    )


@pytest_lsp.fixture(
    params=["visual_studio_code", "neovim"],
    config=ClientServerConfig(client_factory=make_client, server_command=SERVER),
)
async def client(lsp_client: KernelscopeClient, request: pytest.FixtureRequest):
    lsp_client.editor = request.param  # type: ignore[attr-defined]
    lsp_client.finished = []
    lsp_client.refreshes = 0  # type: ignore[attr-defined]
    lsp_client.answer = None  # type: ignore[attr-defined]  # set by each test

    @lsp_client.feature("kernelscope/jobFinished")
    def on_finished(*args: object) -> None:
        lsp_client.finished.append(args[-1])

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def on_refresh(params: None) -> None:
        lsp_client.refreshes += 1  # type: ignore[attr-defined]

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def on_inlay_refresh(params: None) -> None:
        lsp_client.refreshes += 1  # type: ignore[attr-defined]

    lsp_client.protocol.fm.features.pop(types.WORKSPACE_CONFIGURATION)  # pytest-lsp's default answer

    @lsp_client.feature(types.WORKSPACE_CONFIGURATION)
    async def configuration(params: types.ConfigurationParams) -> object:
        answer = asyncio.ensure_future(lsp_client.answer(params))  # type: ignore[attr-defined]
        released = asyncio.ensure_future(release.wait())
        await asyncio.wait([answer, released], return_when=asyncio.FIRST_COMPLETED)
        released.cancel()
        if not answer.done():  # a client that never answered: answer at teardown, late
            answer.cancel()
            return []
        return answer.result()

    release = asyncio.Event()
    yield
    release.set()
    await asyncio.sleep(0.1)
    await lsp_client.shutdown_session()


def save(client: KernelscopeClient, ws: Path) -> None:
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=(ws / "kernel.py").as_uri())
        )
    )


@pytest.mark.slow
async def test_folder_answer_cannot_grant_trust(client: KernelscopeClient, workspace: Path) -> None:
    """The user did not trust the workspace; its folder settings claim trust: nothing runs."""
    marker = marked_kernel(workspace)
    asked: list[types.ConfigurationParams] = []

    async def answer(params: types.ConfigurationParams) -> list[dict]:
        asked.append(params)
        return [{"kernelscope": HOSTILE_FOLDER_ANSWER} for _ in params.items]

    client.answer = answer  # type: ignore[attr-defined]
    await client.initialize_session(init_params(workspace, client.editor, {"trusted": False}))  # type: ignore[attr-defined]
    await wait_for(lambda: bool(asked), timeout=10, message="the server never asked for configuration")
    uri = (workspace / "kernel.py").as_uri()
    # the folder's benchOnSave is in force (it alone turns it on) and the lens says why nothing runs
    for _ in range(100):
        found = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        if any(lens.command and lens.command.title == UNTRUSTED for lens in found or []):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError([lens.command.title for lens in found or [] if lens.command])
    save(client, workspace)

    def said_untrusted() -> bool:
        return any(d.code == "bench_on_save_off" for d in client.diagnostics.get(uri) or [])

    # the save's check is published after its probe was (or was not) scheduled
    await wait_for(lambda: said_untrusted() or client.progress_reports, 30, "the save was never checked")
    # Before, a fixed 4 s and "kernel.py left no mark": a probe that did start needs longer than
    # that to import torch and run it, so the test passed with trust ignored. A probe's start
    # (its progress) comes one debounce (50-100 ms) after the check.
    await asyncio.sleep(1.0)
    assert not client.progress_reports, "a probe started in a workspace the user did not trust"
    assert said_untrusted(), client.diagnostics.get(uri)
    assert not marker.exists(), "kernel.py ran in a workspace the user did not trust"
    assert client.finished == []
    # an explicit user command still works: showHistory answers from the records alone
    history = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="kernelscope.showHistory", arguments=[{"workspace": str(workspace)}]
        )
    )
    assert history["entries"]  # type: ignore[index]


@pytest.mark.slow
async def test_folder_answer_cannot_pick_executor_or_interpreter(
    client: KernelscopeClient, workspace: Path
) -> None:
    """The user trusts the workspace; the folder asks for a foreign Ray cluster and /bin/false:
    the probe still runs locally, with the user's interpreter, and passes."""
    marker = marked_kernel(workspace)

    async def answer(params: types.ConfigurationParams) -> list[dict]:
        return [dict(HOSTILE_FOLDER_ANSWER) for _ in params.items]

    client.answer = answer  # type: ignore[attr-defined]
    await client.initialize_session(init_params(workspace, client.editor, {"trusted": True}))  # type: ignore[attr-defined]
    await wait_for(  # the folder's answer is in force: the save's probe runs with it
        lambda: any(m.message.startswith(SERVING) for m in client.log_messages),
        30,
        "the session never started",
    )
    save(client, workspace)
    await wait_for(lambda: bool(client.finished), timeout=120)
    finished = _as_dict(client.finished[0])
    assert isinstance(finished, dict)
    assert "error" not in finished, finished
    result = finished["result"]
    assert result["passed"] is True, result
    assert not any("Ray" in m for m in result.get("messages", [])), result["messages"]
    assert marker.exists()  # it did run: trust came from the user
    assert not (workspace.parent.parent / "attacker.invalid").exists()


async def null_answer(params: types.ConfigurationParams) -> None:
    return None


async def garbage_answer(params: types.ConfigurationParams) -> object:
    return {"not": "a list"}


async def no_answer(params: types.ConfigurationParams) -> object:
    await asyncio.sleep(3600)
    return []


@pytest.mark.slow
@pytest.mark.parametrize("answer", [null_answer, garbage_answer, no_answer], ids=["null", "garbage", "never"])
async def test_bad_configuration_answers_do_not_stop_the_watcher(
    client: KernelscopeClient, workspace: Path, answer: object
) -> None:
    client.answer = answer  # type: ignore[attr-defined]
    await client.initialize_session(init_params(workspace, client.editor, {"trusted": False}))  # type: ignore[attr-defined]
    await watching(client, workspace)
    before = client.refreshes  # type: ignore[attr-defined]
    record = json.loads((workspace / "memory" / "v1.json").read_text())
    record["masked"] = True
    (workspace / "memory" / "v1.json").write_text(json.dumps(record, indent=2))  # an agent's write
    await wait_for(lambda: client.refreshes > before, timeout=5, message="memory/ change never refreshed")  # type: ignore[attr-defined]
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=(workspace / "kernel.py").as_uri())
        )
    )
    assert any(lens.command and "1 masked" in lens.command.title for lens in lenses or [])
