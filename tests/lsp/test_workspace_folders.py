"""Which folders are workspaces, as they come and go: a child of the editor's folder that is a
symbolic link to a workspace elsewhere, a workspace an agent creates while the editor is open
(watched from the moment its kernel.py is opened), and one moved away (its diagnostics cleared,
nothing left running for it)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from kernelscope.daemon.lsp.state import ServerState, WorkspaceState
from tests.conftest import EXAMPLES, NO_TORCH_SERVER
from tests.support.lsp_client import (
    KernelscopeClient,
    _as_dict,
    make_client,
    open_with,
    start_session,
    wait_for,
    watching,
)


def _workspace(path: Path) -> Path:
    shutil.copytree(EXAMPLES / "vector_add", path, ignore=shutil.ignore_patterns("__pycache__"))
    return path


def test_a_linked_workspace_is_found_by_its_resolved_path(tmp_path: Path) -> None:
    """Documents arrive by their resolved paths: a workspace registered under the link's path
    got no lens, hover or save check, and its own lens's commands were refused as outside the
    folders (before)."""
    target = _workspace(tmp_path / "elsewhere" / "ws")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "link").symlink_to(target)
    (folder / "link_again").symlink_to(target)
    (tmp_path / "outside").mkdir()
    state = ServerState()
    state.set_folders([folder])
    assert list(state.workspaces) == [target]  # once, for both links
    ws = state.workspace_of((folder / "link" / "kernel.py").resolve(), resolved=True)
    assert ws is not None and ws.kernel_path == target / "kernel.py"
    assert state.inside_folders(folder / "link") and state.inside_folders(target / "memory")
    assert not state.inside_folders(tmp_path / "outside")


def test_a_workspace_made_since_the_last_scan_is_found_when_its_kernel_is_asked_for(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    state = ServerState()
    told: list[tuple[list[Path], list[Path]]] = []

    def on_workspaces(added: list[WorkspaceState], removed: list[WorkspaceState]) -> None:
        told.append(([ws.root for ws in added], [ws.root for ws in removed]))

    state.on_workspaces = on_workspaces
    state.set_folders([folder])
    assert state.workspaces == {} and told == []
    made = _workspace(folder / "made_later")
    assert state.discover(made / "kernel.py") is state.workspaces[made]
    assert told == [([made], [])]
    shutil.rmtree(made)
    state.rescan()
    assert state.workspaces == {} and told[-1] == ([], [made])


def test_a_workspace_nested_deeper_in_the_folder_is_found_and_kept(tmp_path: Path) -> None:
    """The editor's folder is a monorepo's root (eglot's and lsp-mode's project root, a git
    root opened in VS Code): a workspace two folders down gets its kernel served and its
    commands answered (before: scans looked at the folder and its children only, and the
    commands called it "not an optimization workspace"). The climb stops at the folder: a
    workspace above an editor folder (a subfolder of one opened) is outside it. A README's
    code block other than ```kernelscope makes no workspace."""
    outside = _workspace(tmp_path / "outside_ws")
    folder = tmp_path / "proj"
    nested = _workspace(folder / "ops" / "softmax" / "kernel_opt_va")
    (folder / "ops" / "plain").mkdir()
    (folder / "ops" / "plain" / "kernel.py").write_text("x = 1\n")
    (folder / "ops" / "plain" / "README.md").write_text("# op\n\n```python\nx = 1\n```\n")
    notes = outside / "notes"  # a second editor folder, inside a workspace
    notes.mkdir()
    state = ServerState()
    told: list[tuple[list[Path], list[Path]]] = []
    state.on_workspaces = lambda added, removed: told.append(
        ([w.root for w in added], [w.root for w in removed])
    )
    state.set_folders([folder, notes])
    assert state.workspaces == {}
    ws = state.discover(nested / "kernel.py")
    assert ws is not None and ws is state.workspaces.get(nested) and told == [([nested], [])]
    assert state.discover(nested / "memory") is ws and len(told) == 1  # (a command naming a folder in it)
    assert state.discover(folder / "ops" / "plain" / "kernel.py") is None
    assert state.discover(outside / "kernel.py") is None  # not in the editor's folders
    assert state.discover(notes / "scratch.py") is None  # nor above one
    state.rescan()
    assert state.workspaces == {nested: ws}  # a scan keeps it
    shutil.rmtree(nested)
    state.rescan()
    assert state.workspaces == {} and told[-1] == ([], [nested])


@pytest_lsp.fixture(config=ClientServerConfig(client_factory=make_client, server_command=NO_TORCH_SERVER))
async def client(lsp_client: KernelscopeClient, tmp_path: Path):
    folder = tmp_path / "folder"
    folder.mkdir()
    await start_session(lsp_client, folder, {"dbUrl": str(tmp_path / "exp.sqlite")}, "visual_studio_code")
    yield
    await lsp_client.shutdown_session()


async def _titles(client: KernelscopeClient, uri: str) -> list[str]:
    found = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [lens.command.title for lens in found or [] if lens.command]


@pytest.mark.slow
async def test_a_workspace_an_agent_creates_is_served_and_watched_and_let_go(
    client: KernelscopeClient, tmp_path: Path
) -> None:
    """The editor opened an empty folder; an agent creates a workspace in it and opens its
    kernel.py: it gets lenses at once, an agent's record written afterwards reaches them
    through the watcher, and moved out of the folder its diagnostics are cleared (before: no
    lens until a restart, and never watched)."""
    ws = _workspace(client.folder / "kernel_opt_made_later")
    kernel = ws / "kernel.py"
    uri = kernel.as_uri()
    open_with(client, kernel, kernel.read_text())
    titles = await _titles(client, uri)
    assert any(t.startswith("best ") for t in titles) and any("next v5" in t for t in titles), titles
    await wait_for(lambda: client.diagnostics.get(uri), 30, "the opened text was not checked")
    await watching(client, ws)
    record = json.loads((ws / "memory" / "v4.json").read_text())
    (ws / "memory" / "v5.json").write_text(json.dumps({**record, "version": "v5"}))  # an agent's record

    for _ in range(100):  # (the lens request is the probe: refreshes are not counted here)
        titles = await _titles(client, uri)
        if any("next v6" in t for t in titles):
            break
        await asyncio.sleep(0.1)
    assert any("next v6" in t for t in titles), titles
    published = len(client.published)
    ws.rename(tmp_path / "moved_away")
    await wait_for(
        lambda: (uri, []) in client.published[published:], 30, f"diagnostics not cleared: {client.published}"
    )


async def test_a_command_with_only_optional_fields_runs_without_arguments(client: KernelscopeClient) -> None:
    """topExperiments from Helix's palette (no arguments): answered as `{}` is, every
    workspace's best (before: refused, "expected one object argument, got 0 arguments",
    while cancel, the other command with no required field, ran)."""
    top = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelscope.topExperiments")
    )
    assert top == []  # (a new store: nothing recorded yet)
    cancel = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelscope.cancel")
    )
    assert _as_dict(cancel) == {"cancelled": []}


@pytest_lsp.fixture(config=ClientServerConfig(client_factory=make_client, server_command=NO_TORCH_SERVER))
async def bare_client(lsp_client: KernelscopeClient):
    """A client the test starts itself (its own settings)."""
    yield
    await lsp_client.shutdown_session()


@pytest.mark.slow
async def test_a_removed_folders_diagnostics_stay_cleared_when_its_job_ends(
    bare_client: KernelscopeClient, tmp_path: Path
) -> None:
    """The editor removes a folder while a restart's agent runs in its workspace: the job is
    cancelled and kernel.py's diagnostics cleared, and the cancelled job's end does not publish
    them again (before: they came back, for a folder no longer open, and stayed)."""
    client = bare_client
    folder = tmp_path / "folder"
    ws = _workspace(folder / "kernel_opt_vector_add")
    agent = f'{sys.executable} -c "import time; time.sleep(300)"'
    options = {"dbUrl": str(tmp_path / "exp.sqlite"), "agent": agent}  # (untrusted: a notice to clear)
    await start_session(client, folder, options)
    kernel = ws / "kernel.py"
    uri = kernel.as_uri()
    open_with(client, kernel, kernel.read_text())
    await wait_for(lambda: client.diagnostics.get(uri), 30, "the opened text was not checked")
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelscope.restart", arguments=[{"workspace": str(ws)}])
    )
    published = len(client.published)
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[], removed=[types.WorkspaceFolder(uri=folder.as_uri(), name="folder")]
            )
        )
    )
    await wait_for(lambda: bool(client.finished), 30, "the removed folder's job was not cancelled")
    assert client.finished[0]["cancelled"]
    await client.protocol.send_request_async(
        "kernelscope/workspaces", {}
    )  # (what the job's end sent came first)
    after = [found for at, found in client.published[published:] if at == uri]
    assert after and after[-1] == [], after


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///tmp/a%20b/kernel.py", "/tmp/a b/kernel.py"),
        ("file:///tmp/%C3%A9t%C3%A9/kernel.py", "/tmp/été/kernel.py"),
        ("file://server/share/ws/kernel.py", "//server/share/ws/kernel.py"),  # (before: /share/ws/...)
        ("file://localhost/tmp/ws/kernel.py", "/tmp/ws/kernel.py"),
        ("/tmp/plain path/kernel.py", "/tmp/plain path/kernel.py"),
    ],
)
def test_uris_become_the_paths_the_editor_means(uri: str, path: str) -> None:
    from kernelscope.daemon.lsp.state import uri_to_path

    assert uri_to_path(uri) == Path(path)


def _initialized_with_root_path(root_path: str) -> ServerState:
    """The folders a session starts with when the editor names only the deprecated rootPath
    (Helix outside a git repository): rootUri null, no workspace folders."""
    from types import SimpleNamespace

    from kernelscope.daemon.lsp.features import lifecycle
    from kernelscope.daemon.lsp.language_server import ClientCapabilities

    ls = SimpleNamespace(tcp_token=None, state=ServerState(), client=ClientCapabilities(), show_warning=print)
    params = types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_path=root_path, root_uri=None, process_id=None
    )
    lifecycle.initialize(ls, params)  # type: ignore[arg-type]
    return ls.state


@pytest.mark.parametrize("kind", ["relative", "relative dot", "home", "a file"])
def test_a_root_path_is_taken_only_as_an_existing_absolute_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    """rootPath is a path, not a URI, with no rule for what a relative one is relative to:
    before, "kernel_opt_vector_add" or "." was taken from the daemon's own working directory
    (served a workspace the editor never named), "~" as a folder literally named so, a file
    as a folder; now each is ignored, with one line in the log saying so."""
    ws = _workspace(tmp_path / "parent" / "kernel_opt_vector_add")
    monkeypatch.setenv("HOME", str(ws))
    monkeypatch.chdir(ws if kind in ("relative dot", "home") else ws.parent)
    root_path = {
        "relative": "kernel_opt_vector_add",
        "relative dot": ".",
        "home": "~",
        "a file": str(ws / "kernel.py"),
    }[kind]
    with caplog.at_level("INFO", logger="kernelscope.lsp"):
        state = _initialized_with_root_path(root_path)
    assert state.workspaces == {}
    ignored = [r.getMessage() for r in caplog.records if "rootPath" in r.getMessage()]
    assert len(ignored) == 1 and repr(root_path) in ignored[0], ignored
    assert list(_initialized_with_root_path(str(ws)).workspaces) == [ws]  # an absolute folder is served


def test_a_workspace_stays_one_while_its_kernel_is_rewritten(tmp_path: Path) -> None:
    """kernel.py deleted and created again (an agent's rewrite, a slow write): a scan in
    between keeps the workspace, its state and jobs (the same object); its folder moved out,
    it goes."""
    folder = tmp_path / "folder"
    ws_path = _workspace(folder / "ws")
    state = ServerState()
    removed: list[Path] = []
    state.on_workspaces = lambda added, gone: removed.extend(ws.root for ws in gone)
    state.set_folders([folder])
    ws = state.workspaces[ws_path]
    text = (ws_path / "kernel.py").read_text()
    (ws_path / "kernel.py").unlink()
    state.rescan()
    (ws_path / "kernel.py").write_text(text)
    state.rescan()
    assert state.workspaces == {ws_path: ws} and removed == []
    ws_path.rename(tmp_path / "moved")
    state.rescan()
    assert state.workspaces == {} and removed == [ws_path]


def test_a_new_workspaces_settings_are_asked_for_without_resetting_the_others(tmp_path: Path) -> None:
    """A workspace found later asks for its folder's settings; the workspaces already served
    keep theirs meanwhile (asking for all reset every one to the defaults until the client
    answered)."""
    from dataclasses import replace
    from types import SimpleNamespace

    from kernelscope.daemon.lsp import configuration

    folder = tmp_path / "folder"
    _workspace(folder / "served")
    state = ServerState()
    state.set_folders([folder])
    served = state.workspaces[(folder / "served").resolve()]
    state.set_folder_settings(served, replace(state.folder_defaults, debounce_ms=100))
    made = _workspace(folder / "made_later")
    new = state.discover(made / "kernel.py")
    assert new is not None
    client = SimpleNamespace(client_capabilities=None)  # (one that cannot answer: defaults for the new one)
    asyncio.run(configuration.load_folder_configuration(client, state, print, [new]))  # type: ignore[arg-type]
    assert (
        served.settings.debounce_ms == 100 and new.settings.debounce_ms == state.folder_defaults.debounce_ms
    )


async def test_a_command_on_a_nested_workspace_is_answered(client: KernelscopeClient) -> None:
    """A command names a workspace two folders below the editor's folder, never opened: it is
    answered; a folder that is no workspace is refused naming what it lacks (before: every
    folder was "not an optimization workspace (no kernel.py and memory/)")."""
    ws = _workspace(client.folder / "ops" / "softmax" / "kernel_opt_va")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="kernelscope.compare",
            arguments=[{"workspace": str(ws), "versionA": "v0", "versionB": "v1"}],
        )
    )
    assert result["markdown"].startswith("## v0 → v1")  # type: ignore[index]
    plain = client.folder / "plain"
    plain.mkdir()
    (plain / "kernel.py").write_text("x = 1\n")
    with pytest.raises(Exception, match=r"not an optimization workspace \(no memory/ and no README.md"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="kernelscope.compare",
                arguments=[{"workspace": str(plain), "versionA": "v0", "versionB": "v1"}],
            )
        )


async def test_the_editor_says_not_a_workspace_in_the_engine_s_words_with_its_own_way_out(
    client: KernelscopeClient,
) -> None:
    """The editor's refusal of a folder that is no workspace was worded apart from the
    engine's one error (require_workspace): `workspace: P is not an optimization workspace
    (no memory/ ...)`, without what a workspace holds or what to do. One wording now, the
    engine's, with the way out of the surface: open the folder in the editor, never the CLI's
    `-w DIR` (a folder inside a workspace above the editor's folder, which the editor does not
    serve: open that workspace)."""
    from kernelscope.daemon.engine import DataError
    from kernelscope.daemon.engine.workspace.discovery import require_workspace

    plain = client.folder / "plain"
    plain.mkdir()
    (plain / "kernel.py").write_text("x = 1\n")
    above = client.folder.parent
    for way_out in ("open a workspace's folder", f"open {above} in the editor"):
        if way_out.startswith(f"open {above}"):  # the editor's folder, inside a workspace
            shutil.copy(EXAMPLES / "vector_add" / "kernel.py", above / "kernel.py")
            (above / "memory").mkdir()
        folder = plain
        with pytest.raises(DataError) as by_cli:
            require_workspace(folder)
        head = str(by_cli.value).rsplit(" block", 1)[0] + " block"  # what is missing, what a workspace holds
        with pytest.raises(Exception) as by_editor:
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="kernelscope.compare",
                    arguments=[{"workspace": str(folder), "versionA": "v0", "versionB": "v1"}],
                )
            )
        said = str(by_editor.value)
        assert head in said and way_out in said, (said, head)
        assert "-w" not in said and "-w" in str(by_cli.value), said


async def test_a_command_without_arguments_takes_the_implied_workspace(client: KernelscopeClient) -> None:
    """Helix's `:lsp-workspace-command` sends no arguments: the only workspace served, else the
    only one whose kernel.py is open; with neither, the refusal says what to pass (before: every
    command without arguments was refused)."""

    async def history() -> object:
        return await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="kernelscope.showHistory")
        )

    first = _workspace(client.folder / "kernel_opt_a")
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(event=types.WorkspaceFoldersChangeEvent(added=[], removed=[]))
    )
    assert (await history())["workspace"] == str(first)  # type: ignore[index]
    second = _workspace(client.folder / "kernel_opt_b")
    kernel = second / "kernel.py"
    open_with(client, kernel, kernel.read_text())
    assert (await history())["workspace"] == str(second)  # type: ignore[index]
    # Helix 25.07+ sends the rest of the line as JSON: `... kernelscope.compare {"versionA": ...}`
    compared = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="kernelscope.compare", arguments=[{"versionA": "v0", "versionB": "v4"}]
        )
    )
    assert compared["workspace"] == str(second) and "v4" in compared["markdown"], compared  # type: ignore[index]
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=kernel.as_uri()))
    )
    with pytest.raises(
        Exception, match=r'2 served, 0 with kernel.py open: pass one object argument \{"workspace"'
    ):
        await history()


@pytest.mark.parametrize("editor", ["neovim@v0.11.0", "neovim@v0.7.0"])
async def test_helix_is_shown_what_a_command_answers(
    bare_client: KernelscopeClient, tmp_path: Path, editor: str
) -> None:
    """Helix drops what workspace/executeCommand answers, errors included: its user ran
    `:lsp-workspace-command kernelscope.showHistory` and saw nothing (before). Now a client that
    says it is Helix gets the history's markdown in a file outside the workspace, opened with
    window/showDocument where the client can (25.07), else named as `:open <file>` (25.01); a
    refusal, and a result without markdown, as a message: a sentence, not its JSON. Other
    clients get no message."""
    client = bare_client
    ws = _workspace(tmp_path / "folder" / "kernel_opt_vector_add")
    helix = types.ClientInfo(name="helix", version="25.07.1" if editor.endswith("0.11.0") else "25.01.1")
    await start_session(client, ws.parent, {"dbUrl": str(tmp_path / "exp.sqlite")}, editor, helix)
    answered = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelscope.showHistory")
    )
    if editor.endswith("0.11.0"):
        await wait_for(lambda: client.shown_documents, 10, "no window/showDocument")
        shown = Path(unquote(urlparse(client.shown_documents[-1].uri).path))
    else:
        await wait_for(lambda: client.messages, 10, "no window/showMessage")
        told = client.messages[-1].message
        assert told.startswith("kernelscope.showHistory: :open "), told
        shown = Path(told.removeprefix("kernelscope.showHistory: :open "))
    assert shown.parts[-3:-1] == ("kernelscope", "answers") and not shown.is_relative_to(ws)
    assert shown.read_text() == answered["markdown"]  # type: ignore[index]
    told_before = len(client.messages)
    with pytest.raises(Exception, match="versionA: Field required"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="kernelscope.compare")
        )
    await wait_for(lambda: len(client.messages) > told_before, 10, "the refusal was not shown")
    refusal = client.messages[-1]
    assert refusal.type == types.MessageType.Error and "versionA: Field required" in refusal.message
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="kernelscope.cancel"))
    await wait_for(lambda: "kernelscope.cancel: " in client.messages[-1].message, 10, "cancel's answer")
    # a sentence from engine/views/command_answers.py (was the JSON, `{"cancelled":[]}`)
    assert client.messages[-1].message == "kernelscope.cancel: nothing to cancel: no job was running"


@pytest.mark.parametrize("name", ["helix", "Neovim"])
async def test_helix_is_shown_the_hover_table_as_aligned_text(
    bare_client: KernelscopeClient, tmp_path: Path, name: str
) -> None:
    """Helix draws no Markdown tables: its hover showed `| v1 | 1.16x |` and `|---|---:|` as
    typed (before). A client that says it is Helix gets the rows as columns in a ```text block;
    other clients keep the table."""
    client = bare_client
    ws = _workspace(tmp_path / "folder" / "kernel_opt_vector_add")
    info = types.ClientInfo(name=name, version="25.07.1")
    await start_session(client, ws.parent, {"dbUrl": str(tmp_path / "exp.sqlite")}, "neovim@v0.11.0", info)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=(ws / "kernel.py").as_uri()),
            position=types.Position(line=8, character=6),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    shown = hover.contents.value
    if name == "helix":
        assert "```text\nversion  score  status  summary\n-------  -----  ------  ---" in shown, shown
        assert "\nv3           -  FAIL    Persistent grid-stride loop" in shown and "|" not in shown, shown
    else:
        assert "| version | score | status | summary |\n|---|---:|---|---|" in shown, shown


async def test_other_clients_are_not_sent_command_answers(
    bare_client: KernelscopeClient, tmp_path: Path
) -> None:
    client = bare_client
    ws = _workspace(tmp_path / "folder" / "kernel_opt_vector_add")
    await start_session(client, ws.parent, {"dbUrl": str(tmp_path / "exp.sqlite")}, "neovim@v0.11.0")
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelscope.showHistory")
    )
    with pytest.raises(Exception, match="versionA: Field required"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="kernelscope.compare")
        )
    # (what the daemon shows about a command goes out before the command's answer, on the same
    # stream: with both answers in, anything shown has arrived)
    assert client.shown_documents == [] and client.messages == []


async def test_helix_is_told_how_a_job_it_started_ended(
    bare_client: KernelscopeClient, tmp_path: Path
) -> None:
    """Helix drops `kernelscope/jobFinished` as it drops command answers: a benchmark started
    from Helix answered "started" and then ended with no word (before). It is told, as VS Code
    and Neovim tell their users, `kernelscope benchmark: done` (or the job's error)."""
    client = bare_client
    ws = _workspace(tmp_path / "folder" / "kernel_opt_vector_add")
    helix = types.ClientInfo(name="helix", version="25.07.1")
    await start_session(client, ws.parent, {"dbUrl": str(tmp_path / "exp.sqlite")}, "neovim@v0.11.0", helix)
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelscope.benchmark", arguments=[{"workspace": str(ws)}])
    )

    def ended() -> bool:
        return any(m.message.startswith("kernelscope benchmark: ") for m in client.messages)

    await wait_for(ended, 120, "the benchmark's end was not shown")
    said = [m for m in client.messages if m.message.startswith("kernelscope benchmark: ")]
    assert [m.message for m in said] == ["kernelscope benchmark: done"], said
    assert said[0].type == types.MessageType.Info


async def test_helix_answers_of_two_daemons_do_not_overwrite_each_other(
    bare_client: KernelscopeClient, tmp_path: Path
) -> None:
    """Each Helix starts its own daemon; answer files were named `<workspace>-<command>-<n>` with
    n counted per daemon from 1, and each answer deleted every earlier file of that name: two
    Helix sessions on checkouts of one name wrote over, and deleted, each other's histories (a
    25.01 user told `:open ...-1.md` could read the other workspace's). Another daemon's file
    is left alone; this daemon's earlier answer is replaced."""
    client = bare_client
    ws = _workspace(tmp_path / "folder" / "kernel_opt_vector_add")
    helix = types.ClientInfo(name="helix", version="25.07.1")
    await start_session(client, ws.parent, {"dbUrl": str(tmp_path / "exp.sqlite")}, "neovim@v0.11.0", helix)

    async def show_history() -> Path:
        shown_before = len(client.shown_documents)
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="kernelscope.showHistory")
        )
        await wait_for(lambda: len(client.shown_documents) > shown_before, 10, "no window/showDocument")
        return Path(unquote(urlparse(client.shown_documents[-1].uri).path))

    first = await show_history()
    others = [first.parent / f"kernel_opt_vector_add-showHistory-{n}.md" for n in (2, 3)]
    for other in others:
        other.write_text("another daemon's answer")
    second = await show_history()
    assert second != first and not first.exists() and second.read_text() != "another daemon's answer"
    assert [o.read_text() for o in others] == ["another daemon's answer"] * 2
