"""Who decides that a save runs kernel.py, through a real LSP client (pytest-lsp), and what the
"not trusted" diagnostic tells the user to do about it.

The rule (protocol/settings.py `distrust`): the user's `trusted` (the config file's, or the one
the editor's own settings send as initializationOptions, which replaces it) must cover the
workspace, and an editor that has a workspace trust of its own (VS Code sends it as
`workspaceTrusted`) must not have said no: a restricted window never benchmarks, a trusted one
adds nothing the user's list does not grant. Before, the VS Code extension sent its window's
trust as `trusted`, so a trusted window benchmarked every workspace whatever the config file
said, a restricted one could not be lifted by the config file the diagnostic pointed at, and
the diagnostic's other advice ("set kernelscope.trusted in your editor") named a VS Code setting
that does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig

from kernelscope.daemon.engine.workflows.demo import kernel_with_block
from tests.conftest import NO_TORCH_SERVER
from tests.lsp.test_lsp import KERNEL
from tests.support.lsp_client import (
    KernelscopeClient,
    make_client,
    no_job_starts,
    open_with,
    start_session,
    wait_for,
)

pytestmark = pytest.mark.slow


def write_config(config: Path, folder: Path, trusts: bool) -> None:
    lines = ['mode = "interpreter"', "seeds = 1", "debounce_ms = 100"]
    if trusts:
        lines.append(f'trusted = ["{folder}/kernel_opt_*"]')
    config.write_text("\n".join(lines) + "\n")


async def save_untried(client: KernelscopeClient) -> str:
    """kernel.py written with a BLOCK_SIZE never tried, opened and saved: its check says
    whether it is measured."""
    from lsprotocol import types

    path = client.folder / "kernel_opt_vector_add" / "kernel.py"
    path.write_text(kernel_with_block(KERNEL, 512))
    open_with(client, path, path.read_text())
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    return path.as_uri()


def untrusted_notice(client: KernelscopeClient, uri: str) -> str | None:
    return next(
        (str(d.message) for d in client.diagnostics.get(uri) or [] if d.code == "bench_on_save_off"), None
    )


@pytest_lsp.fixture(config=ClientServerConfig(client_factory=make_client, server_command=NO_TORCH_SERVER))
async def client(lsp_client: KernelscopeClient):
    yield lsp_client
    await lsp_client.shutdown_session()


# (initializationOptions beside the store, whether the config file trusts the workspace,
#  the words the notice must hold, words it must not)
REFUSED = {
    "vscode_restricted_window": (
        {"workspaceTrusted": False},
        True,
        ["the editor has not trusted this window", "Manage Workspace Trust"],
        ["config.toml", "kernelscope.trusted"],
    ),
    "vscode_trusted_window_not_in_config_file": (
        {"workspaceTrusted": True},
        False,
        ["config.toml", 'to trust it: `trusted = ["'],
        ["kernelscope.trusted", "initializationOptions"],
    ),
    "editor_settings_replace_the_config_file": (
        {"trusted": ["/nowhere/kernel_opt_*"]},
        True,
        ["`trusted` your editor sends", "initializationOptions", "replaces the config file's"],
        ["kernelscope.trusted", "Manage Workspace Trust"],
    ),
    "restricted_window_and_not_in_config_file": (
        {"workspaceTrusted": False},
        False,
        ["the editor has not trusted this window", "config.toml"],
        ["kernelscope.trusted"],
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
async def test_a_save_not_trusted_runs_nothing_and_names_what_decided(
    client: KernelscopeClient, folder: Path, users_own_files: Path, case: str
) -> None:
    options, config_trusts, said, unsaid = REFUSED[case]
    write_config(users_own_files, folder, config_trusts)
    await start_session(
        client, folder, {"dbUrl": str(folder / "exp.sqlite"), **options}, "visual_studio_code"
    )
    uri = await save_untried(client)
    await wait_for(
        lambda: untrusted_notice(client, uri) is not None or client.progress_reports,
        30,
        "the save was never checked",
    )
    await no_job_starts(client, within=1.5)
    notice = untrusted_notice(client, uri)
    assert notice is not None, client.diagnostics.get(uri)
    for words in unsaid:  # advice that does nothing in this editor, or names the wrong source
        assert words not in notice, (words, notice)
    for words in said:
        assert words in notice, (words, notice)
    if "config.toml" in said:  # the file the daemon reads, not a path it assumes
        assert str(users_own_files) in notice, notice


async def test_a_trusted_window_over_a_trusting_config_file_runs_the_probe(
    client: KernelscopeClient, folder: Path, users_own_files: Path
) -> None:
    """Both trust decisions say yes: the save is measured (the window's trust is a veto, never
    the only gate that stays shut)."""
    write_config(users_own_files, folder, True)
    await start_session(
        client, folder, {"dbUrl": str(folder / "exp.sqlite"), "workspaceTrusted": True}, "visual_studio_code"
    )
    uri = await save_untried(client)
    await wait_for(lambda: any(f["kind"] == "benchmark" for f in client.finished), 120, "no probe")
    assert untrusted_notice(client, uri) is None
