"""pytest-lsp's test client with the attributes kernelscope's LSP tests keep on it, typed.

Pass `client_factory=make_client` to `ClientServerConfig`; the fixture's `lsp_client` is then a
`KernelscopeClient`, so tests read `client.folder` and `client.finished` without ignores."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features


class KernelscopeClient(LanguageClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.folder: Path = Path()
        """The workspace folder the test opened (set by the fixture)."""
        self.finished: list[Any] = []
        """`kernelscope/jobFinished` notifications, in arrival order."""
        self.published: list[tuple[str, list[str]]] = []
        """Every publishDiagnostics, in arrival order: (uri, ["code@line: message", ...]), lines 0-based."""
        self.diagnostics = _Published(self.published)


class _Published(dict[str, Sequence[types.Diagnostic]]):
    """pytest-lsp's diagnostics by uri (its handler stores each publication here, and a second
    handler cannot be registered), logging every publication in `log` as it is stored."""

    def __init__(self, log: list[tuple[str, list[str]]]) -> None:
        super().__init__()
        self.log = log

    def __setitem__(self, uri: str, found: Sequence[types.Diagnostic]) -> None:
        super().__setitem__(uri, found)
        self.log.append((uri, [f"{d.code}@{d.range.start.line}: {d.message}" for d in found]))


def make_client() -> KernelscopeClient:
    """pytest-lsp's `make_test_lsp_client`, building a `KernelscopeClient`."""
    client = KernelscopeClient(converter_factory=default_converter)
    register_lsp_features(client)
    return client


async def start_session(
    client: KernelscopeClient,
    folder: Path,
    options: dict[str, Any],
    editor: str = "visual_studio_code",
    client_info: types.ClientInfo | None = None,
) -> None:
    """Open `folder` as the one workspace folder with `editor`'s capabilities, `client_info`
    and `{"kernelscope": options}`, collecting jobFinished and every diagnostics publication and
    accepting refresh requests."""
    client.folder = folder
    client.finished = []
    client.published.clear()

    @client.feature("kernelscope/jobFinished")
    def on_finished(*args: object) -> None:
        client.finished.append(_as_dict(args[-1]))

    for method in (types.WORKSPACE_CODE_LENS_REFRESH, types.WORKSPACE_INLAY_HINT_REFRESH):
        client.feature(method)(lambda params: None)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(editor),
            workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name="folder")],
            initialization_options={"kernelscope": options},
            process_id=None,
            client_info=client_info,
        )
    )


def open_with(client: KernelscopeClient, path: Path, text: str) -> None:
    """`didOpen` of `path` (a Python file) with `text` as the editor's buffer."""
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="python", version=1, text=text
            )
        )
    )


async def wait_for(
    predicate: Callable[[], object], timeout: float = 60.0, message: str = "condition not reached in time"
) -> None:
    """Poll `predicate` on the test's event loop until it holds; AssertionError(message) after
    `timeout` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(message)
        await asyncio.sleep(0.05)


async def watching(client: KernelscopeClient, root: Path, since: int = 0, timeout: float = 30.0) -> None:
    """Wait until the daemon says its file watcher covers `root` (the `watching for changes on
    disk:` log message, daemon/lsp/features/lifecycle.py `watching`), in a log message from
    index `since` on: a file written after that is seen, one written before may not be."""
    from kernelscope.daemon.lsp.features.lifecycle import WATCHING

    wanted = str(root.resolve())

    def covered() -> bool:
        return any(
            wanted in m.message.removeprefix(WATCHING).split(", ")
            for m in client.log_messages[since:]
            if m.message.startswith(WATCHING)
        )

    await wait_for(covered, timeout, f"the daemon never said it watches {wanted}")


async def no_job_starts(client: KernelscopeClient, before: Iterable[str] = (), within: float = 1.0) -> None:
    """Assert that no job (a save's probe, a benchmark) starts in the next `within` seconds
    (ten debounces of these sessions; tokens in `before` were there already). A job's start is
    its progress token, created as it starts; its end (`jobFinished`) comes only after the
    runner has imported torch, seconds later, so waiting for no jobFinished would pass while
    the job the test guards against is still starting."""
    window = client.capabilities.window if client.capabilities else None
    assert window and window.work_done_progress, "the client must accept progress for this check"
    await asyncio.sleep(within)
    started = set(client.progress_reports) - set(before)
    assert not started, f"job(s) started: {[client.progress_reports[token] for token in started]}"


def _as_dict(value: object) -> object:
    """pygls hands custom notifications over as named tuples: turn them into dicts."""
    if hasattr(value, "_asdict"):
        return {k: _as_dict(v) for k, v in value._asdict().items()}  # type: ignore[attr-defined]
    if isinstance(value, (list, tuple)):
        return [_as_dict(v) for v in value]
    if hasattr(value, "__dict__"):
        return {k: _as_dict(v) for k, v in vars(value).items()}
    return value
