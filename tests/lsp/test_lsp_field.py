"""The daemon on today's atrex workspace (SOL-ExecBench layout, supervised, an episode
running), through a real LSP client: the running episode in the file lens and its refresh
when live.json changes, the agents' experiments in hover, writes refused with the owner's
name, and a save-triggered probe that measures through the SOL adapter and leaves every file
of the workspace as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities

from kernelscope.daemon.engine.workspace.workspace import Workspace
from tests.conftest import NO_TORCH_SERVER
from tests.engine.test_field_formats import git_status, tree_state
from tests.support.field_workspaces import build_atrex_sol_workspace
from tests.support.lsp_client import KernelscopeClient, _as_dict, make_client, wait_for, watching

pytestmark = pytest.mark.slow
SERVER = NO_TORCH_SERVER


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_atrex_sol_workspace(tmp_path_factory.mktemp("atrex") / "folder" / "kernel_opt_rmsnorm")


@pytest_lsp.fixture(
    params=["visual_studio_code", "neovim"],
    config=ClientServerConfig(client_factory=make_client, server_command=SERVER),
)
async def client(
    lsp_client: KernelscopeClient, request: pytest.FixtureRequest, template: Path, tmp_path: Path
):
    ws = tmp_path / "folder" / template.name
    shutil.copytree(template, ws, symlinks=True)
    lsp_client.ws = ws  # type: ignore[attr-defined]
    lsp_client.refreshes = 0  # type: ignore[attr-defined]
    lsp_client.finished = []

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def on_refresh(params: None) -> None:
        lsp_client.refreshes += 1  # type: ignore[attr-defined]

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def on_inlay_refresh(params: None) -> None:
        lsp_client.refreshes += 1  # type: ignore[attr-defined]

    @lsp_client.feature("kernelscope/jobFinished")
    def on_finished(*args: object) -> None:
        lsp_client.finished.append(_as_dict(args[-1]))

    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(request.param),
            workspace_folders=[types.WorkspaceFolder(uri=ws.parent.as_uri(), name="folder")],
            initialization_options={
                "kernelscope": {
                    "dbUrl": str(tmp_path / "exp.sqlite"),
                    "trusted": True,
                    "mode": "interpreter",
                    "seeds": 1,
                    "debounceMs": 100,
                    "memoryLimitMb": 2000,
                }
            },
            process_id=None,
        )
    )
    yield
    await lsp_client.shutdown_session()


async def titles(client: KernelscopeClient) -> list[str]:
    uri = (client.ws / "kernel.py").as_uri()  # type: ignore[attr-defined]
    found = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [lens.command.title for lens in found or [] if lens.command]


async def test_lens_hover_and_live_episode_refresh(client: KernelscopeClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    found = await titles(client)
    top = next(t for t in found if t.startswith("goal: "))
    assert "best 2.83 us v2, 3.48x vs reference" in top
    assert "running: episode 4 -> v4 exploring, 2 experiments, latest: num_warps=2 for BLOCK_M=4" in top
    assert any("latest v3 pivot, kept v2 | 4 runs, 0 failed, 1 pivot" in t for t in found), found

    kernel = Workspace(ws).kernels().kernels[0]
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=(ws / "kernel.py").as_uri()),
            position=types.Position(line=kernel.def_line - 1, character=kernel.name_column + 1),
        )
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "| v3 | - | PIVOT |" in text
    assert "split-row reduction [revert]" in text and "per workload (measured)" in text

    await watching(client, ws)
    before = client.refreshes  # type: ignore[attr-defined]
    live = json.loads((ws / "memory" / "live.json").read_text())
    live["experiment_count"] = 3
    live["latest_experiment"] = {**live["latest_experiment"], "name": "num_warps=1"}
    (ws / "memory" / "live.json").write_text(json.dumps(live, indent=2))  # the supervisor's write
    await wait_for(lambda: client.refreshes > before, timeout=5)  # type: ignore[attr-defined]
    top = next(t for t in await titles(client) if t.startswith("goal: "))
    assert "3 experiments, latest: num_warps=1" in top


async def test_writes_refused_and_probe_writes_nothing(client: KernelscopeClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    before, status = tree_state(ws), git_status(ws)
    for name, params in (
        ("kernelscope.maskHalf", {"workspace": str(ws)}),
        ("kernelscope.unmask", {"workspace": str(ws), "versions": ["v1"]}),
        ("kernelscope.runIteration", {"workspace": str(ws)}),
    ):
        with pytest.raises(Exception, match="atrex long-horizon supervisor"):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=name, arguments=[params])
            )
    dry = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="kernelscope.maskHalf", arguments=[{"workspace": str(ws), "dryRun": True}]
        )
    )
    assert dry["dry_run"] is True  # type: ignore[index]

    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=(ws / "kernel.py").as_uri())
        )
    )
    uri = (ws / "kernel.py").as_uri()
    # kernel.py is v2's code (the pivot kept it): said at once, not benchmarked again
    await wait_for(
        lambda: any(d.code == "already_tried" for d in client.diagnostics.get(uri) or []), timeout=60
    )
    assert "identical to v2" in client.diagnostics[uri][0].message
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelscope.benchmark", arguments=[{"workspace": str(ws)}])
    )  # measured anyway when asked
    await wait_for(lambda: bool(client.finished), timeout=180)
    result = client.finished[0]["result"]
    assert result["passed"] is True, result
    assert len(result["configs"]) == 3  # one configuration per workload.jsonl line
    found = await titles(client)
    assert any(t.startswith("last probe: PASS") for t in found), found
    assert tree_state(ws) == before and git_status(ws) == status
