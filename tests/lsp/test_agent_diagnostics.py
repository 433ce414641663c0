"""Diagnostics an agent can act on (issue #22), through a real LSP client (pytest-lsp) the way
Claude Code talks to the daemon: didOpen carrying the edited text (an agent's first edit),
full-text didChange, didSave; no initializationOptions but the store (the user's config file
holds the rest). On a workspace `kernelscope iterate` recorded: v0 BLOCK_SIZE 64, v1 1024."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
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
    watching,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def trust(folder: Path, users_own_files: Path, request: pytest.FixtureRequest) -> Path:
    """The user's config file: the interpreter, and trust by a glob when the test asks for it."""
    lines = ['mode = "interpreter"', "seeds = 1", "debounce_ms = 100"]
    if getattr(request, "param", False):
        lines.append(f'trusted = ["{folder}/kernel_opt_*"]')
    users_own_files.write_text("\n".join(lines) + "\n")
    return users_own_files


@pytest_lsp.fixture(config=ClientServerConfig(client_factory=make_client, server_command=NO_TORCH_SERVER))
async def client(lsp_client: KernelscopeClient, folder: Path, trust: Path):
    await start_session(lsp_client, folder, {"dbUrl": str(folder / "exp.sqlite")}, "visual_studio_code")
    yield
    await lsp_client.shutdown_session()


FLAGGED = 'exec("1")\n'
"""A line the static rules flag (dynamic-code): the check of a text with it publishes twice,
its verdict and then its static finding (features/save.py), and nothing after that."""


def kernel(client: KernelscopeClient) -> Path:
    return client.folder / "kernel_opt_vector_add" / "kernel.py"


def messages(client: KernelscopeClient, uri: str) -> list[str]:
    return [f"{d.code}: {d.message}" for d in client.diagnostics.get(uri) or []]


def save_untried_code(client: KernelscopeClient) -> tuple[Path, str]:
    """kernel.py written with a BLOCK_SIZE never tried (512), opened and saved, as an agent does."""
    path = kernel(client)
    uri = path.as_uri()
    path.write_text(kernel_with_block(KERNEL, 512))
    open_with(client, path, path.read_text())
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return path, uri


async def test_an_agents_first_edit_is_checked_on_didopen(client: KernelscopeClient) -> None:
    """The first edit reaches the daemon as didOpen with v0's code (nothing saved yet): v0 is
    named, with a command an agent can run; untrusted, it says once that nothing is measured."""
    path = kernel(client)
    open_with(client, path, kernel_with_block(KERNEL, 64))
    uri = path.as_uri()
    await wait_for(
        lambda: any("already_tried" in m for m in messages(client, uri)), 30, "no check on didOpen"
    )
    found = messages(client, uri)
    identical = next(m for m in found if m.startswith("already_tried"))
    assert "identical to v0" in identical and "`kernelscope bench`" in identical, found
    assert any(m.startswith("bench_on_save_off") and "config.toml" in m for m in found), found
    # saved: checked again, nothing measured, and the "not trusted" notice is not repeated
    path.write_text(kernel_with_block(KERNEL, 64))
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await no_job_starts(client, within=1.5)  # (and the save's check has published)
    assert not any(m.startswith("bench_on_save_off") for m in messages(client, uri)), messages(client, uri)
    assert client.finished == []
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    titles = [lens.command.title for lens in lenses or [] if lens.command]
    assert any(t.startswith("re-benchmark on save is off") for t in titles), (
        titles
    )  # the lens keeps saying it


async def test_a_near_edit_names_the_values_tried_at_the_changed_parameter(client: KernelscopeClient) -> None:
    """didChange (debounced) to a BLOCK_SIZE never tried: the diagnostic names it and what the
    recorded versions scored at the values they used there."""
    path = kernel(client)
    uri = path.as_uri()
    open_with(client, path, path.read_text())  # v1's code
    await wait_for(
        lambda: any("identical to v1" in m for m in messages(client, uri)), 30, "no check on didOpen"
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangeWholeDocument(text=kernel_with_block(KERNEL, 256))
            ],
        )
    )
    await wait_for(lambda: any("near_tried" in m for m in messages(client, uri)), 30, "no check on didChange")
    near = next(m for m in messages(client, uri) if m.startswith("near_tried"))
    assert "BLOCK_SIZE 256 never tried; " in near and "64 -> 1.00x v0" in near and "x v1" in near, near


@pytest.mark.parametrize("trust", [True], indirect=True)
async def test_trusted_by_the_config_file_a_saved_edit_is_measured_and_reported(
    trust: Path, client: KernelscopeClient
) -> None:
    """Trust from the user's config file (a glob over the folder's workspaces), nothing in
    initializationOptions: a save of untried code is probed, and the result is one Information
    diagnostic naming its baseline and how to record it."""
    _path, uri = save_untried_code(client)
    await wait_for(lambda: any(f["kind"] == "benchmark" for f in client.finished), 120, "no probe")
    await wait_for(lambda: any(m.startswith("probe:") for m in messages(client, uri)), 10, "no probe result")
    probe = next(m for m in messages(client, uri) if m.startswith("probe:"))
    assert "probe PASS on the CPU interpreter" in probe and "not comparable with v1" in probe, probe
    assert '`kernelscope iterate -a <category> -d "<what changed>"`' in probe, probe
    assert not any(m.startswith("bench_on_save_off") for m in messages(client, uri))


@pytest.mark.parametrize("trust", [True], indirect=True)
async def test_in_a_workspace_an_orchestrator_drives_the_probe_does_not_ask_for_a_record(
    trust: Path, client: KernelscopeClient
) -> None:
    """atrex's supervisor drives the workspace (its state file is there): the probe still runs,
    but its result must not tell the agent to `kernelscope iterate`, which refuses here (the
    supervisor owns the versions): it says who records instead."""
    (kernel(client).parent / ".orchestrator_state.json").write_text('{"stall_count": 0}\n')
    _path, uri = save_untried_code(client)
    await wait_for(lambda: any(m.startswith("probe:") for m in messages(client, uri)), 120, "no probe result")
    probe = next(m for m in messages(client, uri) if m.startswith("probe:"))
    assert "probe PASS on the CPU interpreter" in probe and "kernelscope iterate" not in probe, probe
    assert "the supervisor driving this workspace records" in probe, probe


@pytest.mark.parametrize("trust", [True], indirect=True)
async def test_once_the_agent_records_the_measured_text_the_diagnostic_stops_asking_for_it(
    trust: Path, client: KernelscopeClient
) -> None:
    """The probe's result ends "record it: `kernelscope iterate ...`"; the agent does so from
        its shell. The watcher's report of the new memory file makes the verdict again once the
    writes rest (features/save.py: RECORD_REST_S), not at the next edit:
        the text on screen is now the recorded version (named, with how to measure it again), and
        nothing asks for a second record of it (which would give one version several scores)."""
    path, uri = save_untried_code(client)
    await wait_for(lambda: any(m.startswith("probe:") for m in messages(client, uri)), 120, "no probe result")
    memory = path.parent / "memory"
    before = {p.name for p in memory.glob("v*.json")}
    agent = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).with_name("kernelscope")),
        *("iterate", "-w", str(path.parent), "--db", str(client.folder / "exp.sqlite")),
        *("--mode", "interpreter", "--seeds", "1", "-a", "tiling", "-d", "BLOCK_SIZE 512", "--json"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await agent.communicate()
    assert agent.returncode == 0, (out, err)
    (recorded,) = {p.name for p in memory.glob("v*.json")} - before
    version = recorded.removesuffix(".json")

    def identical() -> bool:
        return any(
            m.startswith("already_tried") and f"identical to {version}" in m for m in messages(client, uri)
        )

    await wait_for(identical, 30, f"the verdict was not made again after the record: {messages(client, uri)}")
    assert not any("record it" in m for m in messages(client, uri)), messages(client, uri)


async def test_a_python_file_outside_a_workspace_gets_nothing(
    client: KernelscopeClient, tmp_path: Path
) -> None:
    """A .py the editor opens outside every workspace: nothing published, nothing started."""
    other = client.folder / "scripts" / "main.py"
    other.parent.mkdir()
    other.write_text("print('hello')\n")
    open_with(client, other, "print('hello, world')\n")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=other.as_uri()))
    )
    await no_job_starts(client)
    assert other.as_uri() not in client.diagnostics
    assert client.finished == []


FALLBACK_LAUNCHER = """

def kernel_fn(x, y):
    try:
        return _launch(x, y)
    except Exception:
        return torch.add(x, y)
"""


async def test_static_rules_speak_as_the_agent_types(client: KernelscopeClient) -> None:
    """A launcher that falls back to PyTorch in an except branch (KernelBench's rule): an
    error on that line while the text is only typed (didChange, nothing saved, nothing run);
    fixed, it goes away."""
    path = kernel(client)
    honest = kernel_with_block(KERNEL, 64)
    open_with(client, path, honest)
    uri = path.as_uri()
    await wait_for(lambda: bool(messages(client, uri)), 30, "no check on didOpen")
    assert not any(m.startswith("static:") for m in messages(client, uri)), messages(client, uri)
    cheat = honest.replace("def kernel_fn(", "def _launch(") + FALLBACK_LAUNCHER
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=cheat)],
        )
    )
    await wait_for(
        lambda: any(m.startswith("static:torch-fallback-in-except") for m in messages(client, uri)),
        30,
        "no static diagnostic",
    )
    found = next(d for d in client.diagnostics[uri] if d.code == "static:torch-fallback-in-except")
    assert found.severity == types.DiagnosticSeverity.Error
    line = cheat.splitlines()[found.range.start.line]
    assert "torch.add" in line or "except" in line, (found.range, line)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=honest)],
        )
    )
    await wait_for(
        lambda: not any(m.startswith("static:") for m in messages(client, uri)), 30, "the diagnostic stayed"
    )


async def kernel_lenses(client: KernelscopeClient, uri: str) -> list[str]:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [lens.command.title for lens in lenses or [] if lens.command and lens.range.start.line > 0]


async def test_a_text_that_does_not_parse_says_so_and_the_lenses_stay(client: KernelscopeClient) -> None:
    """kernel.py saved with a syntax error: one kernelscope diagnostic at the error says its
    checks stopped there (there was none: a silent stop), and the kernel's lens keeps what was
    measured, marked (it vanished); parsing again, both are back to normal."""
    path = kernel(client)
    uri = path.as_uri()
    good = path.read_text()
    assert await kernel_lenses(client, uri)
    broken = good.replace("def ", "def (", 1)
    path.write_text(broken)
    open_with(client, path, broken)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(lambda: any("does_not_parse" in m for m in messages(client, uri)), 30, "no word why")
    found = [d for d in client.diagnostics[uri] if d.code == "does_not_parse"]
    assert len(found) == 1 and "paused until kernel.py parses" in found[0].message, found
    assert "def (" in broken.splitlines()[found[0].range.start.line], found[0].range
    titles = await kernel_lenses(client, uri)
    assert titles and all(t.startswith("(kernel.py does not parse: invalid syntax") for t in titles), titles
    path.write_text(good)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri), text=good)
    )
    await wait_for(lambda: not any("does_not_parse" in m for m in messages(client, uri)), 30, "it stayed")
    assert not any("does not parse" in t for t in await kernel_lenses(client, uri))


@pytest.mark.parametrize("via", ["didSave", "on disk"])
async def test_a_saved_text_that_does_not_parse_is_published_once(
    client: KernelscopeClient, via: str
) -> None:
    """An agent's edit that does not parse, as Claude Code sends it (didChange, didSave) or
    written from its shell (the watcher's report): one publication, its final set, the
    does_not_parse warning (before: an empty list at the text's arrival and another with its
    verdict, then the warning: editors flicker, and Claude Code skips empty lists anyway)."""
    path = kernel(client)
    uri = path.as_uri()
    await watching(client, path.parent)
    open_with(client, path, path.read_text())  # v1's code
    await wait_for(lambda: any("identical to v1" in m for m in messages(client, uri)), 30, "no verdict")
    await asyncio.sleep(1.0)  # (the opened text's publications are over)
    since = len(client.published)
    broken = path.read_text().replace("def ", "def (", 1)
    if via == "didSave":
        claude_code_edit(client, uri, broken, 2)
    else:
        path.write_text(broken)
    await wait_for(lambda: any("does_not_parse" in m for m in messages(client, uri)), 30, "no word why")
    await asyncio.sleep(1.0)  # (anything else this edit publishes comes meanwhile)
    published = [found for u, found in client.published[since:] if u == uri]
    assert len(published) == 1 and [m.split("@")[0] for m in published[0]] == ["does_not_parse"], published


async def test_a_kernel_too_large_to_parse_in_the_editor_says_so(client: KernelscopeClient) -> None:
    """An agent writes a kernel.py of millions of characters (a table inlined): the daemon's
    parses (lens, hover, hints, the save's checks) hold the GIL about a second per MB, so every
    request waited for them at each save (before: 5-15 s on 10 MB). It reads no further than
    EDITOR_MAX_CHARS and says so at the top of the file; `kernelscope check` reads it whole."""
    from kernelscope.daemon.engine.workspace.kernel_scan import EDITOR_MAX_CHARS

    path = kernel(client)
    uri = path.as_uri()
    table = "TABLE = [" + "1, " * (EDITOR_MAX_CHARS // 3) + "]\n"
    large = path.read_text() + table
    path.write_text(large)
    open_with(client, path, large)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(lambda: any(m.startswith("too_large") for m in messages(client, uri)), 60, "no word")
    (said,) = [d for d in client.diagnostics[uri] if d.code == "too_large"]
    assert "`kernelscope check`" in said.message and said.range.start.line == 0, said
    assert not any("does_not_parse" in m for m in messages(client, uri))
    checked = subprocess.run(
        [str(Path(sys.executable).with_name("kernelscope")), "check", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    codes = [n["code"] for n in json.loads(checked.stdout)["notices"]]
    assert "too_large" not in codes and json.loads(checked.stdout)["tried"], checked  # read whole


@pytest.mark.parametrize("trust", [True], indirect=True)
async def test_a_saved_text_that_does_not_parse_is_not_benchmarked(
    trust: Path, client: KernelscopeClient
) -> None:
    """Trusted, kernel.py saved with a syntax error: nothing is measured (before: a probe ran,
    failed to import, and put a second diagnostic, "benchmark gate failed", at the top of the
    file beside the one at the error); the next text that parses is measured as usual."""
    path = kernel(client)
    uri = path.as_uri()
    broken = path.read_text().replace("def ", "def (", 1)
    path.write_text(broken)
    open_with(client, path, broken)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(lambda: any("does_not_parse" in m for m in messages(client, uri)), 30, "no word why")
    _path, uri = save_untried_code(client)
    await wait_for(lambda: any(m.startswith("probe:") for m in messages(client, uri)), 120, "no probe result")
    assert [f["kind"] for f in client.finished] == ["benchmark"], client.finished
    published = [m for _, found in client.diagnostics.log for m in found]
    assert not any(m.startswith("compile@") for m in published), published


async def test_the_verdict_comes_first_and_a_burst_of_saves_is_linted_once(client: KernelscopeClient) -> None:
    """Saves in a row (an agent writing in steps, a checkout), each starting a thread on another
    line: the static rules wait until the text rests (features/save.py: STATIC_REST_S), so they
    run once, on the last text, and their finding is a second publication after that text's
    verdict (new code: no history notice)."""
    path = kernel(client)
    uri = path.as_uri()
    # the opened text's check ends with its static finding: published, nothing of it comes later
    open_with(client, path, FLAGGED + kernel_with_block(KERNEL, 64))
    await wait_for(
        lambda: any(m.startswith("static:dynamic-code") for m in messages(client, uri)),
        30,
        "no check on didOpen",
    )
    client.published.clear()
    for line in (0, 1, 2):  # text `line` imports threading on that line
        text = "#\n" * line + "import threading\n" + kernel_with_block(KERNEL, 128)
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri), text=text)
        )
        await asyncio.sleep(0.01)

    def linted() -> list[int]:
        return [
            i
            for i, (u, found) in enumerate(client.published)
            if u == uri and any(m.startswith("static:thread-injection") for m in found)
        ]

    await wait_for(linted, 30, "no static finding")
    await asyncio.sleep(1.0)
    assert len(linted()) == 1, client.published  # one lint, of the last text
    first = linted()[0]
    assert any(m.startswith("static:thread-injection@2:") for m in client.published[first][1])
    assert first > 0 and client.published[first - 1][0] == uri, client.published
    assert not any(m.startswith("static:") for m in client.published[first - 1][1]), client.published
    assert any(m.startswith("static:thread-injection") for m in messages(client, uri))


async def test_a_typed_then_saved_text_is_checked_and_published_once(client: KernelscopeClient) -> None:
    """An editor sends didChange then didSave of the same text: the save's check covers the
    typing check (features/save.py cancels it), so nothing is published again once the
    typing debounce (CHECK_DEBOUNCE_S) would have run out."""
    from kernelscope.daemon.lsp.jobs import CHECK_DEBOUNCE_S

    path = kernel(client)
    uri = path.as_uri()
    # the opened text's check ends with its static finding: published, nothing of it comes later
    open_with(client, path, FLAGGED + kernel_with_block(KERNEL, 64))
    await wait_for(
        lambda: any(m.startswith("static:dynamic-code") for m in messages(client, uri)),
        30,
        "no check on didOpen",
    )
    client.published.clear()
    text = kernel_with_block(KERNEL, 1024)  # v1's code: a verdict, no probe, no static finding
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri), text=text)
    )
    await wait_for(
        lambda: any("identical to v1" in m for m in messages(client, uri)), 30, "no verdict on didSave"
    )
    settled = len(client.published)
    await asyncio.sleep(CHECK_DEBOUNCE_S + 1.0)
    assert len(client.published) == settled, client.published[settled:]


def claude_code_edit(client: KernelscopeClient, uri: str, text: str, version: int) -> None:
    """An edit as Claude Code's Write tool makes one after the first: didChange with the whole
    text, then didSave (its debug log: `Sent didChange ... (v2)`, `Sent didSave`). The file
    itself is left as it is: the watcher's report of a write comes at its own time, so the
    test could not tell its late publications of one edit from the next edit's (a rewrite on
    disk is a step of its own, last)."""
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


def published_since(client: KernelscopeClient, uri: str, since: int) -> list[str]:
    """Every diagnostic of every publication under `uri` from index `since` on: Claude Code
    collects them all between an edit and the model's next turn and delivers them together
    (deduplicated), so one publication of another text's notice reaches the model."""
    return [m for u, found in client.published[since:] if u == uri for m in found]


async def test_what_an_edit_publishes_is_about_the_text_it_wrote(client: KernelscopeClient) -> None:
    """Edits in a row (untrusted: the verdicts alone), then one made on disk from the agent's
    shell. Each edit's publications carry its own text's verdict and none of the previous
    text's (before: the save published the previous notices before its check ran, so after
    writing BLOCK_SIZE 2048 the agent was told `512 never tried` beside `2048 never tried`),
    and "re-benchmark on save is off", said once per session, is not said again by an edit."""
    path = kernel(client)
    uri = path.as_uri()
    open_with(client, path, path.read_text())  # v1's code; its check publishes once
    await wait_for(lambda: any("identical to v1" in m for m in messages(client, uri)), 30, "no verdict")
    assert any(m.startswith("bench_on_save_off") for m in messages(client, uri)), messages(client, uri)
    previous = "identical to v1"
    edits = (
        (512, "BLOCK_SIZE 512 never tried"),
        (2048, "BLOCK_SIZE 2048 never tried"),
        (64, "identical to v0"),
    )
    for version, (block, said) in enumerate(edits, start=2):
        since = len(client.published)
        claude_code_edit(client, uri, kernel_with_block(KERNEL, block), version)
        await wait_for(
            lambda said=said: any(said in m for m in messages(client, uri)), 30, f"no verdict on {block}"
        )
        found = published_since(client, uri, since)
        assert not any(previous in m for m in found), (block, found)
        assert not any(m.startswith("bench_on_save_off") for m in found), (block, found)
        previous = said
    await watching(client, path.parent)
    since = len(client.published)
    path.write_text(kernel_with_block(KERNEL, 2048))  # the agent's shell: only the watcher reports it
    await wait_for(
        lambda: any("2048 never tried" in m for m in messages(client, uri)), 30, "no verdict on disk"
    )
    found = published_since(client, uri, since)
    assert not any(previous in m for m in found), found


@pytest.mark.parametrize("trust", [True], indirect=True)
async def test_a_probes_verdict_is_not_said_of_a_later_text(trust: Path, client: KernelscopeClient) -> None:
    """A probe's "probe PASS ... record it" is about the text it measured: once the agent
    writes another (here one that does not parse, so no probe of it replaces the result), no
    publication says it again (before: every publication until the next probe ended carried
    it, under code that was never measured); the lens still shows the numbers, marked stale."""
    path, uri = save_untried_code(client)
    await wait_for(lambda: any(m.startswith("probe:") for m in messages(client, uri)), 120, "no probe result")
    since = len(client.published)
    claude_code_edit(client, uri, path.read_text().replace("def ", "def (", 1), 2)
    await wait_for(
        lambda: any(m.startswith("does_not_parse") for m in messages(client, uri)), 30, "no verdict"
    )
    found = published_since(client, uri, since)
    assert not any(m.startswith("probe@") for m in found), found
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    titles = [lens.command.title for lens in lenses or [] if lens.command]
    assert any("last probe: PASS" in t and "(stale)" in t for t in titles), titles


async def test_a_save_of_the_saved_text_after_an_undo_brings_its_verdict_back(
    client: KernelscopeClient,
) -> None:
    """kernel.py saved with v1's code (its verdict up, its numbers on screen), the buffer typed
    to a BLOCK_SIZE never tried (the buffer's verdict published), then put back and saved
    within the typing rest (an undo and a save; format-on-save). Before: the save cancelled the
    buffer's pending check ("this save's check covers it") and counted as a second report of
    the saved text (same digest, not stale), so nothing checked it: the typed text's verdict
    stayed published under the saved code."""
    path = kernel(client)
    uri = path.as_uri()
    saved = path.read_text()  # v1's code
    open_with(client, path, saved)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(lambda: any("identical to v1" in m for m in messages(client, uri)), 30, "no verdict")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangeWholeDocument(text=kernel_with_block(KERNEL, 512))
            ],
        )
    )
    await wait_for(
        lambda: any("512 never tried" in m for m in messages(client, uri)), 30, "no buffer verdict"
    )
    claude_code_edit(client, uri, saved, 3)  # back to the saved text, and saved
    await wait_for(
        lambda: any("identical to v1" in m for m in messages(client, uri)),
        10,
        "the typed text's verdict stayed published under the saved code",
    )
    assert not any("512 never tried" in m for m in messages(client, uri)), messages(client, uri)


async def test_a_record_that_cannot_be_read_is_said_on_the_record_until_it_can(
    client: KernelscopeClient,
) -> None:
    """memory/v1.json cut short: its warning (why, and what leaves it out) is published on
    memory/v1.json itself, not under kernel.py, where Claude Code told it to the agent again
    after every edit of kernel.py (tests/editors/test_claude_code.py); an edit of kernel.py
    does not publish it again; once the record reads again (on disk: the watcher), it is cleared."""
    path = kernel(client)
    uri = path.as_uri()
    record = path.parent / "memory" / "v1.json"
    record_uri = record.resolve().as_uri()
    good = record.read_text()
    record.write_text(good[: len(good) // 2])  # a write cut short
    await watching(client, path.parent)
    open_with(client, path, kernel_with_block(KERNEL, 256))
    await wait_for(lambda: messages(client, record_uri), 30, "no warning on the record")
    (said,) = messages(client, record_uri)
    assert said.startswith("unreadable_record: memory/v1.json cannot be read: not valid JSON"), said
    assert "left out of every figure" in said and said.endswith("reads as never tried)"), said
    await wait_for(lambda: any("256 never tried" in m for m in messages(client, uri)), 30, "no verdict")
    assert not any("v1.json" in m for _, found in client.published if _ != record_uri for m in found)
    since = len(client.published)
    claude_code_edit(client, uri, kernel_with_block(KERNEL, 512), 2)
    await wait_for(lambda: any("512 never tried" in m for m in messages(client, uri)), 30, "no verdict")
    assert record_uri not in [u for u, _ in client.published[since:]], client.published[since:]
    record.write_text(good)
    await wait_for(lambda: not messages(client, record_uri), 30, "the warning stayed")


async def test_an_agent_replacing_kernel_py_by_a_link_to_a_pipe_leaves_the_daemon_answering(
    client: KernelscopeClient, tmp_path: Path
) -> None:
    """An agent's shell replaces kernel.py by a link to a named pipe: the watcher's read of the
    rewrite (save.saved_text) must not block the event loop waiting for a writer. Found by the
    review of 02a9896 (the watcher read kernel.py on the loop with a plain read)."""
    path = kernel(client)
    await watching(client, path.parent)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    path.unlink()
    path.symlink_to(fifo)
    await asyncio.sleep(1.0)  # (the watcher's report of the change, or its absence, meanwhile)
    try:
        await asyncio.wait_for(
            client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
            ),
            20,
        )
    finally:
        # a reader blocked on the pipe (the bug) is let go, so that the session can end; no
        # reader (nothing blocked, as it should be) makes the open fail
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
