"""pytest-lsp's test client with the attributes kernelscope's LSP tests keep on it, typed.

Pass `client_factory=make_client` to `ClientServerConfig`; the fixture's `lsp_client` is then a
`KernelscopeClient`, so tests read `client.folder` and `client.finished` without ignores."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pygls.protocol import default_converter
from pytest_lsp import LanguageClient
from pytest_lsp.client import register_lsp_features


class KernelscopeClient(LanguageClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.folder: Path = Path()
        """The workspace folder the test opened (set by the fixture)."""
        self.finished: list[Any] = []
        """`kernelscope/jobFinished` notifications, in arrival order."""


def make_client() -> KernelscopeClient:
    """pytest-lsp's `make_test_lsp_client`, building a `KernelscopeClient`."""
    client = KernelscopeClient(converter_factory=default_converter)
    register_lsp_features(client)
    return client


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


def _as_dict(value: object) -> object:
    """pygls hands custom notifications over as named tuples: turn them into dicts."""
    if hasattr(value, "_asdict"):
        return {k: _as_dict(v) for k, v in value._asdict().items()}  # type: ignore[attr-defined]
    if isinstance(value, (list, tuple)):
        return [_as_dict(v) for v in value]
    if hasattr(value, "__dict__"):
        return {k: _as_dict(v) for k, v in vars(value).items()}
    return value
