"""Document notifications (loop), each for the two files kernelscope reads in the editor:
kernel.py's (features/save.py: the check, then the probe) and a workspace README.md's
(features/readme.py: its warnings). Each handler lets the other's documents be. Apart from
server.py so that a save's call chain never passes through the wiring twice
(tests/lsp/test_save_flow.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelscope.daemon.lsp.features import readme, save

if TYPE_CHECKING:
    from lsprotocol import types

    from kernelscope.daemon.lsp.language_server import KernelscopeServer


def did_open(ls: KernelscopeServer, params: types.DidOpenTextDocumentParams) -> None:
    readme.changed(ls, params)
    save.did_open(ls, params)


def did_change(ls: KernelscopeServer, params: types.DidChangeTextDocumentParams) -> None:
    readme.typed(ls, params)
    save.did_change(ls, params)


async def did_save(ls: KernelscopeServer, params: types.DidSaveTextDocumentParams) -> None:
    readme.changed(ls, params)
    await save.did_save(ls, params)


def did_close(ls: KernelscopeServer, params: types.DidCloseTextDocumentParams) -> None:
    readme.closed(ls, params)
    save.did_close(ls, params)
