"""Inline experiment hints from the workspace's history (engine: daemon/engine/history): what
the person editing kernel.py should see at the line they are on.

- hover on any line: the version that introduced it and what it measured (performance blame);
- inlay hints at meta-parameter values: the values earlier versions used there and their scores
  (`tried: 64 1.00x v0 · 1024 12.5x v2`), and, with `blameInlay`, a blame hint on every line;
- on save, before any GPU time: the buffer's fingerprint against every recorded version; an
  identical match is a diagnostic ("identical to v4: FAILED wrong_result ...") and the
  background benchmark is skipped (`kernelscope.benchmark` still runs it). It runs no
  workspace code, so it works in untrusted workspaces and with benchmarks on save off.

Everything here is called off the event loop (the first answer for a workspace builds its
history); the service caches per history state, never per keystroke.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from kernelscope.daemon.lsp.state import WorkspaceState

log = logging.getLogger("kernelscope.lsp")


def _service(ws: WorkspaceState) -> Any:
    from kernelscope.daemon.engine.history.service import history_service

    return history_service(ws.root, ws.settings.db_url)


def warm(ws: WorkspaceState) -> None:
    """Build the history once a workspace is open (seconds for a thousand versions, once)."""
    try:
        _service(ws).warm()
    except Exception:  # hints are best effort: a broken history never takes the daemon down
        log.exception("could not build the history of %s", ws.root)
        return
    # The history of a thousand versions is hundreds of thousands of long-lived objects: left
    # in the collector's oldest generation, every full collection walks them all (a 20 ms
    # pause in 1-2% of hovers). Frozen, they are skipped until the next history change.
    gc.collect()
    gc.freeze()


def blame_markdown(ws: WorkspaceState, line: int, buffer: str | None) -> str | None:
    """Hover text for one line: who introduced it and what it bought."""
    try:
        found = _service(ws).blame_line(line, buffer)
    except Exception:
        log.exception("blame failed for %s", ws.root)
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


def inlay_hints(
    ws: WorkspaceState, buffer: str | None, window: types.Range, lazy_uri: str | None = None
) -> list[types.InlayHint]:
    """Tried values at each meta-parameter in view, and per-line blame when asked for. With
    `lazy_uri` (a client that resolves tooltips) the tables are left for inlayHint/resolve."""
    hints: list[types.InlayHint] = []
    try:
        service = _service(ws)
        for tried in service.tried(buffer):
            if tried.values and _in_range(tried.line, window):
                hint = types.InlayHint(
                    position=types.Position(line=tried.end_line, character=tried.end_character),
                    label=tried.hint,
                    padding_left=True,
                )
                if lazy_uri is None:
                    hint.tooltip = _cached_table(service, tried)
                else:
                    hint.data = HintData(lazy_uri, tried.end_line, tried.end_character).dump()
                hints.append(hint)
        if ws.settings.blame_inlay:
            lines = (
                buffer.splitlines()
                if buffer is not None
                else ws.workspace.kernel_path.read_text().splitlines()
            )
            for found in service.blame(buffer):
                if _in_range(found.line, window) and found.line < len(lines) and lines[found.line].strip():
                    hints.append(
                        types.InlayHint(
                            position=types.Position(line=found.line, character=len(lines[found.line])),
                            label=found.hint,
                            padding_left=True,
                        )
                    )
    except Exception:
        log.exception("history hints failed for %s", ws.root)
    return hints


def tried_tooltip(ws: WorkspaceState, buffer: str | None, where: HintData) -> types.MarkupContent | None:
    """The table of the tried values at `where` in the current text (None when the text has
    changed so that no tried values sit there any more)."""
    try:
        service = _service(ws)
        for tried in service.tried(buffer):
            if tried.values and (tried.end_line, tried.end_character) == (where.line, where.character):
                return _cached_table(service, tried)
    except Exception:
        log.exception("history hints failed for %s", ws.root)
    return None


def _cached_table(service: Any, tried: Any) -> types.MarkupContent:
    """The table of a spot, made once per history state (like its rows): 250 of them are
    ~10 ms to format, a whole-file answer for a client that takes tooltips with the hints."""
    memo = service.history(check=False).memo.setdefault("tried_tables", {})
    key = (tried.key, tried.label, tried.kernel, tried.value)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _tried_table(tried)
    return found


def _tried_table(tried: Any) -> types.MarkupContent:
    rows = ["| value | versions | passed | failed | best |", "|---|---|---:|---:|---|"]
    for value in tried.values:
        best = value.best_score.text() if value.best_score else "-"
        here = " (here)" if value.current else ""
        versions = ", ".join(value.versions[:6])
        rows.append(f"| {value.value}{here} | {versions} | {value.passed} | {value.failed} | {best} |")
        for config, score in list(value.by_config.items())[:8]:
            rows.append(f"| ↳ {config} | | | | {score.text()} |")
    return types.MarkupContent(
        kind=types.MarkupKind.Markdown, value=f"**{tried.label}**\n\n" + "\n".join(rows)
    )


def fingerprint_on_save(ws: WorkspaceState, text: str) -> tuple[list[types.Diagnostic], bool]:
    """The 'already tried' check of the saved text: diagnostics, and whether an identical
    recorded version makes the background benchmark unnecessary."""
    try:
        check = _service(ws).fingerprint(text)
    except Exception:
        log.exception("fingerprint check failed for %s", ws.root)
        return [], False
    if not check.matches or check.verdict is None:
        return [], False
    identical = [m for m in check.matches if m.kind == "identical" and m.version is not None]
    severity = {
        "warning": types.DiagnosticSeverity.Warning,
        "information": types.DiagnosticSeverity.Information,
        "hint": types.DiagnosticSeverity.Hint,
    }.get(check.severity or "information", types.DiagnosticSeverity.Information)
    scan = ws.workspace.kernels()
    line = (scan.kernels[0].def_line - 1) if scan.kernels else 0
    near = [m for m in check.matches if m.kind == "near"][:3]
    # the closest other versions: not the one the verdict already names
    related = "; ".join(m.verdict for m in near if m.verdict != check.verdict) if not identical else ""
    message = check.verdict + (f" (closest: {related})" if related else "")
    if identical:
        message += " — not benchmarked again (run `kernelscope.benchmark` to measure anyway)"
    diagnostic = types.Diagnostic(
        range=types.Range(
            start=types.Position(line=line, character=0), end=types.Position(line=line, character=200)
        ),
        severity=severity,
        source="kernelscope",
        code="already_tried" if identical else "near_tried",
        message=message,
    )
    return [diagnostic], bool(identical)


def compare(ws: WorkspaceState, version_a: str, version_b: str) -> Any:
    return _service(ws).compare(version_a, version_b)
