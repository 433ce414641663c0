"""One module per editor feature, each a thin translation between LSP types and engine calls:
lenses (textDocument/codeLens), hover, hints (inlay hints, resolve), diagnostics (what is
published under kernel.py), commands (workspace/executeCommand and kernelscope's own requests),
save (didOpen/didChange/didSave and changes on disk: the check, then the probe), readme (the
warnings of a README.md open in the editor, as its diagnostics; documents routes didOpen,
didChange, didSave, didClose to both), records (a warning on each memory record that cannot be
read, on that file), lifecycle
(initialize, configuration, folders).

Each handler runs either on the event loop (it changes the live state or talks to the client)
or on a pool (it reads): server.py's table says which. Pool handlers take a `Document`, a
snapshot taken on the loop, never the live state."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from kernelscope.daemon.lsp.state import WorkspaceView
from kernelscope.protocol import workspace_files

if TYPE_CHECKING:  # (engine and models load with the first request, not at start-up)
    from kernelscope.daemon.engine.workspace.last_parse import LineMap
    from kernelscope.protocol.workspace import KernelInfo, KernelScan

UTF32 = PositionCodec(types.PositionEncodingKind.Utf32)  # characters as they are (no conversion)


@dataclass(frozen=True)
class Document:
    """An open kernel.py as a pool handler sees it, taken on the loop."""

    uri: str
    buffer: str | None  # the editor's text; None: not open in the editor, or empty
    view: WorkspaceView
    resolves_tooltips: bool = False  # the client asks inlayHint/resolve for tooltips
    # the client's units for columns (UTF-16 unless it negotiated another): the engine counts
    # characters, so a line with an emoji puts a hint short of its place without this
    codec: PositionCodec = UTF32
    draws_tables: bool = True  # the client draws Markdown tables (not Helix: ClientCapabilities)

    @cached_property
    def text(self) -> str | None:
        """The editor's text, else the file's as it is when first asked (None: empty or
        unreadable). Read here, on the pool, and only by handlers that need it: a lens request
        never reads the file."""
        if self.buffer is not None:
            return self.buffer
        try:
            return workspace_files.read_text(self.view.cache.workspace.kernel_path, errors="replace") or None
        except OSError:
            return None

    def source(self) -> str:
        """The editor's text, else the file's ("" when there is none)."""
        return self.text or ""

    @cached_property
    def lines(self) -> list[str]:
        """The text's lines as editors count them (split once per request)."""
        from kernelscope.protocol.text_positions import source_lines

        return source_lines(self.source())

    @cached_property
    def converts(self) -> bool:
        """Whether any column needs converting: not for an all-ASCII text (one unit a character
        in every encoding; one C-level pass, where a hover would otherwise split the whole
        file into lines only to look at one) nor for a client counting characters."""
        return self.codec.encoding != types.PositionEncodingKind.Utf32 and not self.source().isascii()

    def to_client(self, line: int, character: int) -> types.Position:
        """A position the engine gives (a character column) as the client counts it."""
        if not self.converts:
            return types.Position(line=line, character=character)
        return to_client(self.codec, self.lines, line, character)

    def from_client(self, position: types.Position) -> types.Position:
        """A position the client sent, its column in characters as the engine counts them."""
        if not self.converts:
            return position
        lines = self.lines
        if position.line >= len(lines) or lines[position.line].isascii():
            return position
        found = self.codec.position_from_client_units(lines, position)
        return types.Position(line=found.line, character=found.character)

    @cached_property
    def parsed(self) -> tuple[KernelScan, LineMap | None]:
        """The scan of the editor's text, else of the file's (positions as the user sees
        them); while the text does not parse, the last text that parsed and where its lines
        are now (engine/workspace/last_parse.py: the buffer's forgotten when it is closed).
        Scans are remembered per text, so a hover does not re-parse 1,000 lines."""
        cache = self.view.cache
        if self.text is None:
            return cache.kernels(), None
        return (cache.buffer_parse if self.buffer is not None else cache.saved_parse).scan(self.text)

    def kernels(self) -> list[KernelInfo]:
        return list(self.parsed[0].kernels)


def to_client(codec: PositionCodec, lines: list[str], line: int, character: int) -> types.Position:
    """(line, character column) in the client's units; past the text's end, or on an ASCII line
    (one unit a character in every encoding: most lines, and the codec's per-character count
    would cost 250 hints several ms), it stays as it is."""
    if line >= len(lines) or lines[line].isascii():
        return types.Position(line=line, character=character)
    return codec.position_to_client_units(lines, types.Position(line=line, character=character))
