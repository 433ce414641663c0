"""The save flow, followed at run time from `didSave` to the refreshed lens (issue #24): no
call climbs back into a file it came through (A -> B -> A), on the loop or on the pool. The
server runs under a profile hook (tests/support/traced_server.py) that records every such
call made while the save or the lens handler is on the stack."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from kernelscope.daemon.engine.workflows.demo import kernel_with_block
from tests.conftest import TESTS
from tests.lsp.test_lsp import KERNEL, make_workspace
from tests.support.lsp_client import KernelscopeClient, make_client, start_session, wait_for

pytestmark = pytest.mark.slow
CLIMBS = Path(tempfile.mkdtemp(prefix="kernelscope-save-flow-")) / "climbs.jsonl"
TRACED = [sys.executable, str(TESTS / "support" / "traced_server.py"), str(CLIMBS)]


@pytest.fixture
def folder(tmp_path: Path, users_own_files: Path) -> Path:
    make_workspace(tmp_path)
    users_own_files.write_text('mode = "interpreter"\nseeds = 1\ndebounce_ms = 100\n')
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(client_factory=make_client, server_command=TRACED))
async def client(lsp_client: KernelscopeClient, folder: Path):
    await start_session(lsp_client, folder, {"dbUrl": str(folder / "exp.sqlite")})
    yield
    await lsp_client.shutdown_session()


async def test_the_save_flow_crosses_no_file_twice(client: KernelscopeClient) -> None:
    path = client.folder / "kernel_opt_vector_add" / "kernel.py"
    uri = path.as_uri()
    CLIMBS.unlink(missing_ok=True)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=path.read_text()
            )
        )
    )
    for text in (kernel_with_block(KERNEL, 256), f"import threading\n{kernel_with_block(KERNEL, 512)}"):
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri), text=text)
        )
        await wait_for(
            lambda: any(
                u == uri and any("never tried" in m or "static:" in m for m in found)
                for u, found in client.published
            ),
            60,
            "no verdict",
        )
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        assert lenses
    await wait_for(lambda: any("static:" in m for _, found in client.published for m in found), 30, "no lint")
    climbs = [json.loads(line) for line in CLIMBS.read_text().splitlines()] if CLIMBS.exists() else []
    assert climbs == [], "\n".join(" -> ".join(chain) for chain in climbs)
