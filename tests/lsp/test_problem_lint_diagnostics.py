"""The problem lint in the editor (issue #25 item 1): a trusted KernelBench workspace is
measured on save, and what a trivial kernel would get away with on the problem (19_ReLU: the
identity passes its never-negative inputs) is published as warnings on the problem file's
line, where the problem can be fixed; kernel.py's own diagnostics are unchanged."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from tests.conftest import FIXTURES, NO_TORCH_SERVER
from tests.kernels.test_kernelbench import RELU, RELU_KERNEL
from tests.support.lsp_client import (
    KernelscopeClient,
    make_client,
    open_with,
    start_session,
    wait_for,
    watching,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def folder(tmp_path: Path, users_own_files: Path) -> Path:
    ws = tmp_path / "kernel_opt_relu"
    ws.mkdir()
    shutil.copy(FIXTURES / "kernelbench" / RELU, ws / RELU)
    (ws / "kernel.py").write_text(RELU_KERNEL)
    block = {"bench": {"reference": RELU, "problem_sizes": {"batch_size": 8, "dim": 64}}}
    (ws / "README.md").write_text(f"# relu\n\n```kernelscope\n{json.dumps(block)}\n```\n")
    users_own_files.write_text(f'mode = "interpreter"\nseeds = 1\ndebounce_ms = 100\ntrusted = ["{ws}"]\n')
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(client_factory=make_client, server_command=NO_TORCH_SERVER))
async def client(lsp_client: KernelscopeClient, folder: Path):
    await start_session(lsp_client, folder, {"dbUrl": str(folder / "exp.sqlite")}, "visual_studio_code")
    yield
    await lsp_client.shutdown_session()


async def test_the_problem_file_gets_the_lint_on_its_line(client: KernelscopeClient) -> None:
    ws = client.folder / "kernel_opt_relu"
    kernel = ws / "kernel.py"
    uri = kernel.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=RELU_KERNEL)
        )
    )
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri), text=RELU_KERNEL)
    )
    problem = (ws / RELU).as_uri()
    await wait_for(lambda: bool(client.diagnostics.get(problem)), 240, "no lint on the problem file")
    found = {d.code: d for d in client.diagnostics[problem]}
    assert {"problem:identity-passes", "problem:sign-invariant"} <= set(found), found
    sign = found["problem:sign-invariant"]
    assert sign.severity == types.DiagnosticSeverity.Warning and sign.range.start.line == 25  # get_inputs
    assert not any(str(d.code).startswith("problem:") for d in client.diagnostics.get(uri) or [])


@pytest.mark.parametrize("goes", ["removed from the editor", "deleted"])
async def test_a_workspace_that_goes_clears_its_problem_files_lint_and_its_records_warnings(
    client: KernelscopeClient, goes: str
) -> None:
    """The workspace's folder removed from the editor (didChangeWorkspaceFolders) or deleted on
    disk: kernel.py's diagnostics, the problem file's lint and a record's warning are all
    published empty (before: the lint stayed in the editor's Problems list, for a folder no
    longer open or no longer there)."""
    ws = client.folder / "kernel_opt_relu"
    kernel = ws / "kernel.py"
    uri = kernel.as_uri()
    (ws / "memory").mkdir()
    record = ws / "memory" / "v0.json"
    record.write_text('{"version": "v0", ')  # a write cut short: a warning on the record
    record_uri = record.resolve().as_uri()
    await watching(client, ws)
    open_with(client, kernel, RELU_KERNEL)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri), text=RELU_KERNEL)
    )
    problem = (ws / RELU).as_uri()
    await wait_for(lambda: bool(client.diagnostics.get(problem)), 240, "no lint on the problem file")
    await wait_for(lambda: bool(client.diagnostics.get(record_uri)), 30, "no warning on the record")
    since = len(client.published)
    if goes == "deleted":
        shutil.rmtree(ws)
    else:
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[], removed=[types.WorkspaceFolder(uri=client.folder.as_uri(), name="folder")]
                )
            )
        )
    cleared = [(uri, []), (problem, []), (record_uri, [])]
    with contextlib.suppress(AssertionError):
        await wait_for(lambda: all(c in client.published[since:] for c in cleared), 30)
    assert [c for c in cleared if c not in client.published[since:]] == [], client.published[since:]
