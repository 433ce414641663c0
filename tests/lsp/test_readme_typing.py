"""A README.md typed in the editor is parsed once its text rests, not at every keystroke (the
same typing debounce as kernel.py's check: lsp/jobs.py), while opening and saving it publish
at once. Counted with the real handlers, the real jobs and a stand-in for the server: the
parses, not the time they take."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lsprotocol import types

from kernelscope.daemon.lsp.features import documents, readme
from kernelscope.daemon.lsp.jobs import Jobs
from kernelscope.daemon.lsp.state import ServerState

KEYS = 60


class _Server:
    """What the document handlers use of KernelscopeServer for a README: its buffer, the jobs,
    the pool (run in place) and the publications (recorded)."""

    def __init__(self, readme_file: Path) -> None:
        self.state = ServerState()
        self.jobs = Jobs(self, self.state)  # type: ignore[arg-type]
        self.workspace = SimpleNamespace(text_documents={}, position_codec=None)
        self.readme_file = readme_file
        self.published: list[list[types.Diagnostic]] = []
        self.rested = asyncio.Event()

    def readme_path(self, uri: str) -> Path | None:
        return self.readme_file if uri == self.readme_file.as_uri() else None

    def kernel_workspace(self, uri: str) -> None:
        return None  # (no kernel.py in these tests)

    async def off_loop(self, call: Any, *args: Any) -> Any:
        return call(*args)

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self.published.append(params.diagnostics)
        self.rested.set()

    def edit(self, text: str) -> SimpleNamespace:
        """The buffer is now `text` (pygls's job): the params of the notification that says so."""
        uri = self.readme_file.as_uri()
        self.workspace.text_documents[uri] = SimpleNamespace(source=text)
        return SimpleNamespace(text_document=SimpleNamespace(uri=uri))


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the README's warnings were computed for."""
    texts: list[str] = []

    def count(text: str, path: str, codec: Any) -> list[types.Diagnostic]:
        texts.append(text)
        return []

    monkeypatch.setattr(readme, "readme_diagnostics", count)
    return texts


async def _settled(ls: _Server) -> None:
    """The next publication, then every task it leaves behind done."""
    await asyncio.wait_for(ls.rested.wait(), 30)
    ls.rested.clear()
    await asyncio.gather(*ls.jobs.tasks)


def test_a_readme_typed_key_by_key_is_parsed_once_it_rests(tmp_path: Path, parsed: list[str]) -> None:
    """60 keys (a flood of didChange, each handled on its own turn of the loop): before, each
    parsed the README on the pool (a 1.3 MiB one typed at 50 ms kept a kernel.py hover waiting
    4.66 s); now the last text is parsed, once, and published."""
    ls = _Server(tmp_path / "README.md")

    async def typing() -> None:
        ls.state.loop = asyncio.get_running_loop()
        text = "# notes\n"
        for _key in range(KEYS):
            text += "x"
            documents.did_change(ls, ls.edit(text))  # type: ignore[arg-type]
            await asyncio.sleep(0)  # the next notification is the loop's next turn
        await _settled(ls)
        assert parsed == [text], f"{len(parsed)} parses for {KEYS} keys"
        assert len(ls.published) == 1

    asyncio.run(typing())


def test_opening_and_saving_a_readme_publish_at_once(
    tmp_path: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No debounce for didOpen and didSave (the typing debounce made an hour long here: nothing
    waits for it), and a save drops the typing parse still pending (the saved text covers it),
    as a close does."""
    from kernelscope.daemon.lsp import jobs

    monkeypatch.setattr(jobs, "CHECK_DEBOUNCE_S", 3600.0)
    ls = _Server(tmp_path / "README.md")

    async def session() -> None:
        ls.state.loop = asyncio.get_running_loop()
        documents.did_open(ls, ls.edit("# opened\n"))  # type: ignore[arg-type]
        await _settled(ls)
        assert parsed == ["# opened\n"]
        documents.did_change(ls, ls.edit("# typed\n"))  # type: ignore[arg-type]
        await documents.did_save(ls, ls.edit("# typed\n"))  # type: ignore[arg-type]
        await _settled(ls)
        assert parsed == ["# opened\n", "# typed\n"]  # the save's parse; the typing one dropped
        assert not ls.jobs.typing, ls.jobs.typing
        documents.did_change(ls, ls.edit("# typed again\n"))  # type: ignore[arg-type]
        documents.did_close(ls, ls.edit("# typed again\n"))  # type: ignore[arg-type]
        assert ls.published[-1] == [] and not ls.jobs.typing, ls.jobs.typing
        assert parsed == ["# opened\n", "# typed\n"]

    asyncio.run(session())
