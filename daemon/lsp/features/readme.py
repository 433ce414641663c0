"""README.md open in the editor (loop): the README model's warnings (engine/workspace/readme.py:
a stop condition kernelscope cannot check, a template placeholder left in, no measurable stop
condition) published as the README's diagnostics, each on the line it names (one about the
README as a whole on its first line), as the buffer is opened and saved (at once) and edited
(once the text rests: the typing debounce of kernel.py's check, lsp/jobs.py `after_typing`;
a parse per keystroke of a large README kept kernel.py's requests waiting on the pool);
cleared when it is closed. Only the editor's buffer is read: nothing is written, and nothing is published
for a README the user is not looking at. The words, the line and the kind are the engine's;
this module only translates them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types

from kernelscope.daemon.lsp.features import to_client

if TYPE_CHECKING:
    from pygls.workspace.position_codec import PositionCodec

    from kernelscope.daemon.lsp.language_server import KernelscopeServer


def readme_diagnostics(text: str, path: str, codec: PositionCodec) -> list[types.Diagnostic]:
    """(pool) The README's warnings as diagnostics, columns in the client's units (`codec`)."""
    from kernelscope.daemon.engine.workspace.readme import parse_readme
    from kernelscope.protocol.text_positions import source_lines

    notes = parse_readme(text, path).notes
    lines = source_lines(text) if notes else []
    found = []
    for note in notes:
        line = max(0, (note.line or 1) - 1)
        end = len(lines[line]) if line < len(lines) else 0
        found.append(
            types.Diagnostic(
                range=types.Range(
                    start=types.Position(line=line, character=0), end=to_client(codec, lines, line, end)
                ),
                severity=types.DiagnosticSeverity.Warning,
                source="kernelscope",
                code=note.code,
                message=note.message,
            )
        )
    return found


def _buffer(ls: KernelscopeServer, uri: str) -> str | None:
    """The editor's text of `uri`, None when it is not open."""
    document = ls.workspace.text_documents.get(unquote(uri))
    return document.source if document is not None else None


async def publish(ls: KernelscopeServer, uri: str) -> None:
    """The open README's warnings, read from its buffer on the pool; dropped when the buffer
    changed or closed meanwhile (that text's publication decides)."""
    text = _buffer(ls, uri)
    path = ls.readme_path(uri)
    if text is None or path is None:
        return
    found = await ls.off_loop(readme_diagnostics, text, str(path), ls.workspace.position_codec)
    if _buffer(ls, uri) == text:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=found))


def changed(ls: KernelscopeServer, params: Any) -> None:
    """didOpen, didSave of a workspace's README.md (any other document: nothing): published at
    once, and the typing publication still pending dropped (this one covers it)."""
    uri = params.text_document.uri
    path = ls.readme_path(uri)
    if path is not None:
        ls.jobs.cancel_typing(path)
        ls.jobs.spawn(publish(ls, uri))


def typed(ls: KernelscopeServer, params: types.DidChangeTextDocumentParams) -> None:
    """didChange of a workspace's README.md: published once the text rests."""
    uri = params.text_document.uri
    path = ls.readme_path(uri)
    if path is not None:

        def fire() -> None:
            ls.jobs.spawn(publish(ls, uri))

        ls.jobs.after_typing(path, fire)


def closed(ls: KernelscopeServer, params: types.DidCloseTextDocumentParams) -> None:
    """didClose of a workspace's README.md: its diagnostics go with it (and its typing
    publication still pending)."""
    uri = params.text_document.uri
    path = ls.readme_path(uri)
    if path is not None:
        ls.jobs.cancel_typing(path)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
