"""What the editor shows while kernel.py is being edited, through a real LSP client (pytest-lsp)
on a workspace `kernelscope iterate` wrote (v0 BLOCK_SIZE 64, v1 BLOCK_SIZE 1024): a buffer
that does not parse between keystrokes keeps the last parse's kernels and tried values, moved
to where their lines are now (never left on a line that moved); lenses follow the buffer; and
didClose drops the buffer: the file on disk is what is shown and checked from then on."""

from __future__ import annotations

import asyncio
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
    open_with,
    start_session,
    wait_for,
    watching,
)

pytestmark = pytest.mark.slow
SERVER = NO_TORCH_SERVER
EVERYTHING = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=80, character=0))


@pytest_lsp.fixture(config=ClientServerConfig(client_factory=make_client, server_command=SERVER))
async def client(lsp_client: KernelscopeClient, folder: Path):
    options = {"dbUrl": str(folder / "exp.sqlite"), "trusted": False, "mode": "interpreter", "seeds": 1}
    await start_session(lsp_client, folder, options)
    yield
    await lsp_client.shutdown_session()


def kernel(client: KernelscopeClient) -> Path:
    return client.folder / "kernel_opt_vector_add" / "kernel.py"


def edited(text: str, after: dict[str, str]) -> str:
    """`text` with a line inserted after the first line that starts with each key."""
    lines = text.splitlines(keepends=True)
    for start, added in after.items():
        at = next(i for i, line in enumerate(lines) if line.startswith(start))
        lines.insert(at + 1, added + "\n")
    return "".join(lines)


def change(client: KernelscopeClient, path: Path, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def hints(client: KernelscopeClient, path: Path) -> list[tuple[int, int, str]]:
    found = await client.text_document_inlay_hint_async(
        types.InlayHintParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()), range=EVERYTHING)
    )
    return sorted((h.position.line, h.position.character, str(h.label)) for h in found or [])


async def hover(client: KernelscopeClient, path: Path, line: int, character: int) -> str | None:
    found = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=line, character=character),
        )
    )
    return found.contents.value if found is not None else None  # type: ignore[union-attr]


async def kernel_lens_lines(client: KernelscopeClient, path: Path) -> list[int]:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    return [
        lens.range.start.line
        for lens in lenses or []
        if lens.command is not None and "kernel" in (lens.command.arguments or [{}])[0]
    ]


def line_of(text: str, start: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if line.lstrip().startswith(start))


async def test_a_buffer_that_does_not_parse_keeps_hints_hover_and_lenses_where_their_lines_went(
    client: KernelscopeClient,
) -> None:
    """Two lines typed: an import above the kernel (every line below moves down one) and a
    call not yet closed inside it (nothing parses). The kernel's summary, the tried values,
    hover on its name and its lens stay, each on the line its text moved to."""
    path = kernel(client)
    saved = path.read_text()
    open_with(client, path, saved)
    before = await hints(client, path)
    assert any(label.startswith("tried:") for _, _, label in before), before
    table = await hover(client, path, line_of(saved, "def add_kernel"), 6)
    assert table is not None and "| v1 |" in table.replace("**", ""), table
    typing = edited(
        saved, {"import triton.language": "import math", "    pid = ": "    extra = tl.load(x_ptr +"}
    )
    change(client, path, typing, 2)

    def moved(line: int) -> int:  # the import moves lines after it by one, the open call by two
        return line + (line >= line_of(saved, "@triton.jit")) + (line > line_of(saved, "pid = "))

    assert await hints(client, path) == sorted((moved(line), c, label) for line, c, label in before)
    def_line = line_of(typing, "def add_kernel")
    assert def_line == moved(line_of(saved, "def add_kernel"))
    shown = await hover(client, path, def_line, 6)
    assert shown is not None and shown.split("\n\n---\n")[0] == table.split("\n\n---\n")[0], shown
    assert await kernel_lens_lines(client, path) == [line_of(typing, "@triton.jit")]


async def test_lines_typed_above_a_kernel_move_its_lens(client: KernelscopeClient) -> None:
    """Unsaved lines above a kernel: its lens is where the kernel is in the buffer, not where
    it is in the file (it was, the lines typed above it later)."""
    path = kernel(client)
    saved = path.read_text()
    open_with(client, path, saved)
    assert await kernel_lens_lines(client, path) == [line_of(saved, "@triton.jit")]
    typing = edited(saved, {"import triton.language": "import math\nimport os"})
    change(client, path, typing, 2)
    assert await kernel_lens_lines(client, path) == [line_of(saved, "@triton.jit") + 2]


async def test_a_half_typed_signature_keeps_the_kernel(client: KernelscopeClient) -> None:
    """The kernel's own `def` line is the one being typed (a parameter added, its bracket not
    yet closed): the kernel is found by its name on the line that still defines it."""
    path = kernel(client)
    saved = path.read_text()
    open_with(client, path, saved)
    def_line = line_of(saved, "def add_kernel")
    summary = [h for h in await hints(client, path) if h[0] == def_line]
    assert summary, "no summary hint at the kernel's def line"
    lines = saved.splitlines(keepends=True)
    lines[def_line] = lines[def_line].replace("BLOCK_SIZE: tl.constexpr):", "BLOCK_SIZE: tl.constexpr, extra")
    typing = "".join(lines)
    change(client, path, typing, 2)
    after = [h for h in await hints(client, path) if h[0] == def_line]
    assert [label for _, _, label in after] == [label for _, _, label in summary]
    assert after[0][1] == len(typing.splitlines()[def_line])  # at the end of the line as it is now
    shown = await hover(client, path, def_line, 6)
    assert shown is not None and "| v1 |" in shown.replace("**", ""), shown
    assert await kernel_lens_lines(client, path) == [line_of(saved, "@triton.jit")]


async def test_a_verdict_sits_on_the_kernel_in_the_buffer(client: KernelscopeClient) -> None:
    """Comment lines typed above the kernel keep it v1's code ("identical to v1", said on the
    kernel's line): the diagnostic is on the kernel's line in the buffer it is about, not the
    line the kernel has in the file."""
    path = kernel(client)
    uri = path.as_uri()
    saved = path.read_text()
    typing = edited(saved, {"import triton.language": "# try a larger block\n# and fewer warps"})
    open_with(client, path, typing)

    def verdict() -> list[int]:
        return [d.range.start.line for d in client.diagnostics.get(uri, []) if d.code == "already_tried"]

    await wait_for(lambda: bool(verdict()), 30, "no verdict on the buffer")
    assert verdict() == [line_of(typing, "def add_kernel")]


async def test_closing_an_unsaved_buffer_falls_back_to_the_file(client: KernelscopeClient) -> None:
    """An agent's edit (didOpen with text that does not parse), closed without saving: the
    file on disk is what the diagnostics, hints and hover are about from then on; and a
    change on disk after the close is checked and shown as the file says."""
    path = kernel(client)
    uri = path.as_uri()
    saved = path.read_text()
    await watching(client, path.parent)
    open_with(client, path, edited("import os\n" + saved, {"    pid = ": "    extra = tl.load(x_ptr +"}))

    def codes() -> list[str | int | None]:
        return [d.code for d in client.diagnostics.get(uri, [])]

    await wait_for(lambda: "does_not_parse" in codes(), 30, "no does_not_parse for the buffer")
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(
        lambda: "does_not_parse" not in codes(), 30, f"the closed buffer's diagnostics stay: {codes()}"
    )
    def_line = line_of(saved, "def add_kernel")
    assert any(line == def_line for line, _, _ in await hints(client, path))
    path.write_text("\n\n" + kernel_with_block(KERNEL, 64))  # v0's code, two lines lower, on disk
    await wait_for(lambda: "already_tried" in codes(), 30, f"the file's change was not checked: {codes()}")
    # (the file on disk before the write may carry already_tried too: the lens is asked until
    # the watcher's event has moved it, as an editor asks again at the daemon's refresh)
    moved, lines = [line_of(saved, "@triton.jit") + 2], None
    deadline = asyncio.get_running_loop().time() + 30
    while (lines := await kernel_lens_lines(client, path)) != moved:
        assert asyncio.get_running_loop().time() < deadline, f"the lens stayed on {lines}, not {moved}"
        await asyncio.sleep(0.1)
    shown = await hover(client, path, def_line + 2, 6)
    assert shown is not None and "| v1 |" in shown.replace("**", ""), shown


def test_a_keystroke_in_a_long_kernel_diffs_only_the_changed_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Placing the last parse in a long text that does not parse: the line diff is quadratic
    on repeated lines (10,000 lines of kernels took 1.2 s, 60,000 over a minute, on every hover
    and hint request while the interpreter lock was held). The common head and tail are
    matched in one pass; only the lines between them are diffed."""
    import difflib

    from kernelscope.daemon.engine.workspace import last_parse

    compared: list[int] = []

    class Spy(difflib.SequenceMatcher):  # type: ignore[type-arg]
        def __init__(self, junk: None, a: list[str], b: list[str], autojunk: bool = True) -> None:
            compared.append(max(len(a), len(b)))
            super().__init__(junk, a, b, autojunk)

    monkeypatch.setattr(last_parse.difflib, "SequenceMatcher", Spy)
    text = "\n".join(KERNEL.replace("add_kernel", f"add_kernel{i}") for i in range(400))
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    typing = "".join([*lines[:middle], "    z = tl.load(x_ptr +\n", *lines[middle:]])
    moved = last_parse.LineMap.between(text, typing)
    assert max(compared, default=0) <= 1, compared
    assert (moved.line(middle - 1), moved.line(middle), moved.line(len(lines) - 1)) == (
        middle - 1,
        middle + 1,
        len(lines),
    )
