"""README.md open in the editor gets the README model's warnings as diagnostics (a stop
condition kernelscope cannot check, on its line), follows the buffer as it is edited, and is
cleared when it is fixed or closed; nothing is written into the workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities

from tests.conftest import EXAMPLES, NO_TORCH_SERVER
from tests.support.lsp_client import KernelscopeClient, make_client, open_with, start_session, wait_for

pytestmark = pytest.mark.slow
GOOD = "- memory-bound target: bandwidth >= 4.32TB/s"
COMMA = "- memory-bound target: bandwidth >= 4,32TB/s"


@pytest.fixture
def folder(tmp_path: Path, users_own_files: Path) -> Path:
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    readme = ws / "README.md"
    assert GOOD in readme.read_text()
    readme.write_text(readme.read_text().replace(GOOD, COMMA))
    users_own_files.write_text('mode = "interpreter"\nseeds = 1\ndebounce_ms = 100\n')
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(client_factory=make_client, server_command=NO_TORCH_SERVER))
async def client(lsp_client: KernelscopeClient, folder: Path):
    await start_session(lsp_client, folder, {"dbUrl": str(folder / "exp.sqlite")})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(client_factory=make_client, server_command=NO_TORCH_SERVER))
async def helix_outside_git(lsp_client: KernelscopeClient, folder: Path):
    """A session as Helix opens it where no git repository holds the workspace (hx started in
    it): no rootUri, no workspace folders, the workspace as the deprecated rootPath alone."""
    lsp_client.folder = folder
    ws = folder / "kernel_opt_vector_add"
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("neovim"),
            root_path=str(ws),
            root_uri=None,
            workspace_folders=[],
            initialization_options={"kernelscope": {"dbUrl": str(folder / "exp.sqlite")}},
            process_id=None,
            client_info=types.ClientInfo(name="helix", version="25.01.1"),
        )
    )
    yield
    await lsp_client.shutdown_session()


def shown(client: KernelscopeClient, uri: str) -> list[str] | None:
    """What the last publication for `uri` said (None: none yet)."""
    said = [found for published, found in client.published if published == uri]
    return said[-1] if said else None


async def test_an_open_readme_shows_its_unreadable_stop_condition_until_fixed(
    client: KernelscopeClient,
) -> None:
    readme = client.folder / "kernel_opt_vector_add" / "README.md"
    text = readme.read_text()
    line = text.splitlines().index(COMMA)
    uri = readme.as_uri()
    kernel = readme.with_name(
        "kernel.py"
    )  # the workspace served, kernel.py checked: the README, not open, gets nothing
    open_with(client, kernel, kernel.read_text())
    await wait_for(
        lambda: shown(client, kernel.as_uri()) is not None, 60, "kernel.py's check published nothing"
    )
    assert shown(client, uri) is None
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text=text)
        )
    )
    await wait_for(lambda: bool(client.diagnostics.get(uri)), 30, "no diagnostics on the open README")
    codes = {d.code: d for d in client.diagnostics[uri]}
    # the bullet skipped, on its line; and with it the README states no target kernelscope checks
    assert set(codes) == {"readme:stop-condition-skipped", "readme:no-measurable-stop-condition"}, codes
    assert codes["readme:no-measurable-stop-condition"].range.start.line == 0
    found = codes["readme:stop-condition-skipped"]
    assert found.range.start.line == line and found.range.end.line == line, found
    assert found.severity == types.DiagnosticSeverity.Warning and found.source == "kernelscope"
    assert found.range.end.character == len(COMMA), found
    assert "4,32 has a decimal comma (write 4.32)" in found.message, found.message
    assert not found.message.startswith("README line"), found.message  # the range says where

    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text.replace(COMMA, GOOD))],
        )
    )
    await wait_for(lambda: shown(client, uri) == [], 30, "the fixed README's warning stays")

    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    await wait_for(lambda: bool(shown(client, uri)), 30, "the broken bullet again: no warning")
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(lambda: shown(client, uri) == [], 30, "a closed README keeps its warning")
    assert readme.read_text() == text  # nothing written


async def test_a_readme_gets_no_lens_hover_or_hint_and_one_outside_a_workspace_nothing(
    client: KernelscopeClient,
) -> None:
    """VS Code and Helix send a workspace's README.md (editor-clients/), and with it every request
    the server offers for an open document: each answers nothing for it. A README.md the editor
    has open outside any workspace (the editor's folder itself) gets no diagnostics at all."""
    readme = client.folder / "kernel_opt_vector_add" / "README.md"
    outside = client.folder / "README.md"
    outside.write_text(f"# notes\n\n## Stop Conditions\n{COMMA}\n")
    for path in (outside, readme):  # in this order: the outside one is handled first
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=path.as_uri(), language_id="markdown", version=1, text=path.read_text()
                )
            )
        )
    uri = readme.as_uri()
    await wait_for(lambda: bool(client.diagnostics.get(uri)), 30, "no diagnostics on the open README")
    assert shown(client, outside.as_uri()) is None
    document = types.TextDocumentIdentifier(uri=uri)
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=40, character=0))
    assert not await client.text_document_code_lens_async(types.CodeLensParams(text_document=document))
    hovered = types.HoverParams(text_document=document, position=types.Position(line=0, character=2))
    assert await client.text_document_hover_async(hovered) is None
    hinted = types.InlayHintParams(text_document=document, range=whole)
    assert not await client.text_document_inlay_hint_async(hinted)


async def test_a_readme_is_served_when_the_editor_names_its_folder_by_root_path_alone(
    helix_outside_git: KernelscopeClient,
) -> None:
    """Helix, started in a workspace that no git repository holds, names it by rootPath alone
    (rootUri null, no folders): the workspace is served and its README's warnings shown
    (before: the daemon read rootUri only, served no workspace, and showed nothing there)."""
    client = helix_outside_git
    readme = client.folder / "kernel_opt_vector_add" / "README.md"
    uri = readme.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=readme.read_text()
            )
        )
    )
    await wait_for(lambda: bool(client.diagnostics.get(uri)), 30, "no diagnostics on the open README")
    assert "readme:stop-condition-skipped" in {d.code for d in client.diagnostics[uri]}


async def test_a_document_opened_with_language_id_null_is_served(client: KernelscopeClient) -> None:
    """eglot 1.16+ sends `"languageId": null` for a buffer whose mode its server was not started
    for (the workspace README joining the daemon that manages python-mode), other clients may
    for kernel.py: both are served by their path, not their language."""
    ws = client.folder / "kernel_opt_vector_add"
    for path in (ws / "README.md", ws / "kernel.py"):
        item = types.TextDocumentItem(uri=path.as_uri(), language_id=None, version=1, text=path.read_text())  # type: ignore[arg-type]
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))  # sent as null
    readme_uri = (ws / "README.md").as_uri()
    await wait_for(lambda: bool(client.diagnostics.get(readme_uri)), 30, "no diagnostics on the README")
    assert "readme:stop-condition-skipped" in {d.code for d in client.diagnostics[readme_uri]}
    kernel_uri = (ws / "kernel.py").as_uri()
    await wait_for(lambda: shown(client, kernel_uri) is not None, 60, "kernel.py's check published nothing")
    hovered = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=kernel_uri),
        position=types.Position(line=0, character=0),
    )
    await client.text_document_hover_async(hovered)  # answered (None or a hover), not an error
