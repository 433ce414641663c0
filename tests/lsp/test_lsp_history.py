"""History hints through a real LSP client (pytest-lsp), VS Code and Neovim capabilities, on a
workspace whose history `kernelscope iterate` wrote (v0 BLOCK_SIZE 64, v1 BLOCK_SIZE 1024):
blame in hover on the launch line, the values already tried as inlay hints at BLOCK_SIZE,
'already tried' on saving v0's code (no benchmark), and `kernelscope.compare`."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from kernelscope.daemon.engine.workflows.demo import kernel_with_block
from tests.conftest import NO_TORCH_SERVER
from tests.lsp.test_lsp import KERNEL
from tests.support.lsp_client import KernelscopeClient, make_client, no_job_starts, start_session, wait_for

pytestmark = pytest.mark.slow
SERVER = NO_TORCH_SERVER


@pytest_lsp.fixture(
    params=["visual_studio_code", "neovim"],
    config=ClientServerConfig(client_factory=make_client, server_command=SERVER),
)
async def client(lsp_client: KernelscopeClient, request: pytest.FixtureRequest, folder: Path):
    options = {"dbUrl": str(folder / "exp.sqlite"), "trusted": True, "mode": "interpreter", "seeds": 1}
    await start_session(lsp_client, folder, {**options, "debounceMs": 100}, request.param)
    yield
    await lsp_client.shutdown_session()


def kernel(client: KernelscopeClient) -> Path:
    return client.folder / "kernel_opt_vector_add" / "kernel.py"


def launch_line(path: Path) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines()) if "add_kernel[grid]" in line)


async def test_blame_in_hover_on_the_launch_line(client: KernelscopeClient) -> None:
    path = kernel(client)
    line = launch_line(path)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=line, character=8),
        )
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert text.startswith("introduced in v1"), text
    assert "vs v0" in text and "PASS" in text
    assert text.count("BLOCK 1024") == 1, text  # the action is in the first line, not repeated
    commit_line = text.split("\n\n")[-1]  # the commit that brought the line, with its subject
    assert commit_line.startswith("`") and "V1:" in commit_line, text


async def test_values_already_tried_at_block_size(client: KernelscopeClient) -> None:
    path = kernel(client)
    line = launch_line(path)
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=60, character=0)
            ),
        )
    )
    tried = [h for h in hints or [] if str(h.label).startswith("tried:")]
    at_launch = [h for h in tried if h.position.line == line]
    assert at_launch, [(h.position.line, h.label) for h in hints or []]
    label = str(at_launch[0].label)
    assert "64" in label and "1024" in label and "v0" in label and "v1" in label, label
    assert at_launch[0].position.character == path.read_text().splitlines()[line].index("1024") + 4
    # the table per value: sent with the hint, or on inlayHint/resolve to a client that asks so
    capabilities = client.capabilities.text_document.inlay_hint  # type: ignore[union-attr]
    resolves = bool(capabilities and capabilities.resolve_support)
    hint = at_launch[0]
    if resolves:
        assert hint.tooltip is None and hint.data, hint
        hint = await client.inlay_hint_resolve_async(hint)
    tooltip = hint.tooltip.value  # type: ignore[union-attr]
    assert "| value | versions |" in tooltip and "1024 (here)" in tooltip, tooltip
    foreign = types.InlayHint(position=hint.position, label="x", data={"uri": 3})
    assert (await client.inlay_hint_resolve_async(foreign)).tooltip is None  # not ours: unchanged


async def test_saving_v0s_code_says_already_tried_without_a_benchmark(client: KernelscopeClient) -> None:
    path = kernel(client)
    uri = path.as_uri()
    path.write_text(kernel_with_block(KERNEL, 64))  # exactly v0's kernel
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(lambda: bool(client.diagnostics.get(uri)), timeout=30, message="no diagnostic")
    diagnostic = client.diagnostics[uri][0]
    assert diagnostic.code == "already_tried" and diagnostic.message.startswith("identical to v0"), diagnostic
    await no_job_starts(client)
    assert client.finished == []


async def test_saving_a_near_version_names_it_once(client: KernelscopeClient) -> None:
    """Only BLOCK_SIZE differs from v0 and v1: the diagnostic names the closest version once
    (the verdict), and any other close version after it, never the verdict again."""
    path = kernel(client)
    uri = path.as_uri()
    path.write_text(kernel_with_block(KERNEL, 256))
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(lambda: bool(client.diagnostics.get(uri)), timeout=30, message="no diagnostic")
    diagnostic = client.diagnostics[uri][0]
    assert diagnostic.code == "near_tried" and diagnostic.message.startswith("near v"), diagnostic
    verdict = diagnostic.message.split(" (closest: ")[0]
    assert diagnostic.message.count(verdict) == 1, diagnostic.message


async def test_compare_command(client: KernelscopeClient) -> None:
    ws = str(client.folder / "kernel_opt_vector_add")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="kernelscope.compare", arguments=[{"workspace": ws, "versionA": "v0", "versionB": "v1"}]
        )
    )
    assert "BLOCK_SIZE=64" in result["markdown"] and "BLOCK_SIZE=1024" in result["markdown"]  # type: ignore[index]
    with pytest.raises(Exception, match="v9"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="kernelscope.compare",
                arguments=[{"workspace": ws, "versionA": "v0", "versionB": "v9"}],
            )
        )
