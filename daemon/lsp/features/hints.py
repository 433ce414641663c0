"""Inline experiment hints from the workspace's history (engine: daemon/engine/history): what
the person editing kernel.py sees at the line they are on (pool handlers).

- inlay hints: each kernel's one-line summary after its `def`, the values earlier versions used
  at each meta-parameter and their scores (`tried: 64 1.00x v0 · 1024 12.5x v2`), and, with
  `blameInlay`, a blame hint on every line; a client that resolves tooltips gets the tables of
  tried values on inlayHint/resolve;
- blame (used by hover): the version that introduced a line and what it measured.

The first answer for a workspace builds its history (once; the workspace cache keeps it).
Hints are best effort: a broken history is logged and shows nothing, never an error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from kernelscope.daemon.lsp.features import Document
from kernelscope.daemon.lsp.features.lenses import kernel_texts
from kernelscope.daemon.lsp.state import WorkspaceView

log = logging.getLogger("kernelscope.lsp")


def blame_markdown(view: WorkspaceView, line: int, buffer: str | None) -> str | None:
    """Hover text for one line: who introduced it and what it bought."""
    try:
        found = view.cache.history().blame_line(line, buffer)
    except Exception:
        log.exception("blame failed for %s", view.root)
        return None
    if found is None:
        return None
    parts = [found.hint]
    effect = found.effect
    if effect is not None and effect.action and effect.action not in found.hint:
        parts.append(f"*{effect.action}*")
    if found.commit and found.commit_subject:
        parts.append(f"`{found.commit[:12]}` {found.commit_subject}")
    return "\n\n".join(parts)


def _in_range(line: int, window: types.Range) -> bool:
    return window.start.line <= line <= window.end.line


@dataclass(frozen=True)
class HintData:
    """What a "tried" hint carries for inlayHint/resolve: the document and where the hint sits
    (the tried values are found again there, in the document's text at resolve time)."""

    uri: str
    line: int
    character: int

    def dump(self) -> dict[str, Any]:
        return {"uri": self.uri, "line": self.line, "character": self.character}

    @classmethod
    def parse(cls, data: Any) -> HintData | None:
        """None for anything a client sends back that this daemon did not write."""
        if not isinstance(data, dict):
            return None
        uri, line, character = data.get("uri"), data.get("line"), data.get("character")
        if not isinstance(uri, str) or not isinstance(line, int) or not isinstance(character, int):
            return None
        return cls(uri, line, character)


def inlay_hints(doc: Document, params: types.InlayHintParams) -> list[types.InlayHint]:
    """Each kernel's summary after its `def` line, then the history's hints in view."""
    lines = doc.lines
    texts = kernel_texts(doc.view)
    hints = []
    for kernel in doc.kernels():
        line = kernel.def_line - 1
        if not _in_range(line, params.range) or line >= len(lines):
            continue
        hints.append(
            types.InlayHint(
                position=doc.to_client(line, len(lines[line])),
                label=texts.get(kernel.name, ""),
                padding_left=True,
            )
        )
    return hints + history_hints(doc, params.range)


def history_hints(doc: Document, window: types.Range) -> list[types.InlayHint]:
    """Tried values at each meta-parameter in view, and per-line blame when asked for. For a
    client that resolves tooltips the tables are left for inlayHint/resolve."""
    hints: list[types.InlayHint] = []
    view, lines = doc.view, doc.lines
    try:
        service = view.cache.history()
        for tried in _tried(doc, service):
            if tried.values and _in_range(tried.line, window):
                where = doc.to_client(tried.end_line, tried.end_character)
                hint = types.InlayHint(position=where, label=tried.hint, padding_left=True)
                if doc.resolves_tooltips:
                    hint.data = HintData(doc.uri, where.line, where.character).dump()
                else:
                    hint.tooltip = _cached_table(service, tried)
                hints.append(hint)
        if view.settings.blame_inlay:
            for found in service.blame(doc.text):
                if _in_range(found.line, window) and found.line < len(lines) and lines[found.line].strip():
                    hints.append(
                        types.InlayHint(
                            position=doc.to_client(found.line, len(lines[found.line])),
                            label=found.hint,
                            padding_left=True,
                        )
                    )
    except Exception:
        log.exception("history hints failed for %s", view.root)
    return hints


def resolve(doc: Document, hint: types.InlayHint, where: HintData) -> types.InlayHint:
    """The table behind a "tried" hint, asked for when the user points at it: a whole-file
    answer then carries no tables (formatting 250 of them after a history change is ~9 ms)."""
    try:
        service = doc.view.cache.history()
        for tried in _tried(doc, service):
            at = doc.to_client(tried.end_line, tried.end_character)
            if tried.values and (at.line, at.character) == (where.line, where.character):
                hint.tooltip = _cached_table(service, tried)
                break
    except Exception:
        log.exception("history hints failed for %s", doc.view.root)
    return hint


def _tried(doc: Document, service: Any) -> list[Any]:
    """The tried values of the document's text; while it does not parse, those of the last
    text that did, on the lines that are still there (Document.parsed)."""
    moved = doc.parsed[1]
    return service.tried(doc.text) if moved is None else moved.tried(service.tried(moved.parsed))


def _cached_table(service: Any, tried: Any) -> types.MarkupContent:
    """The spot's table (views/tried_table.py, made once per history state) as LSP markup."""
    from kernelscope.daemon.engine.views.tried_table import tried_markdown

    return types.MarkupContent(kind=types.MarkupKind.Markdown, value=tried_markdown(service, tried))
