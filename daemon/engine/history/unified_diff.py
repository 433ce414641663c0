"""Applying an experiment's unified diff to the kernel it was made on: the store keeps an
experiment's code as a diff (`code_change`), the history needs the text it produced.
Pure text work, no git: a hunk that does not fit gives None, never a guess."""

from __future__ import annotations

import re

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_unified_diff(base: str, diff: str) -> str | None:
    """`base` with a unified diff of one file applied; None when a hunk does not fit."""
    lines = base.splitlines(keepends=True)
    output: list[str] = []
    position = 0
    hunk_lines: list[str] = []
    hunks: list[tuple[int, list[str]]] = []
    start = None
    for line in diff.splitlines(keepends=True):
        match = _HUNK.match(line)
        if match:
            if start is not None:
                hunks.append((start, hunk_lines))
            start, hunk_lines = int(match.group(1)), []
        elif start is not None and line[:1] in (" ", "-", "+", "\\"):
            hunk_lines.append(line)
        elif start is not None and line in ("\n", ""):
            hunk_lines.append(" \n")
    if start is not None:
        hunks.append((start, hunk_lines))
    if not hunks:
        return None
    for start, body in hunks:
        begin = max(start - 1, 0) if any(b[:1] in (" ", "-") for b in body) else start
        if begin < position:
            return None
        output += lines[position:begin]
        position = begin
        for entry in body:
            tag, text = entry[:1], entry[1:]
            if tag == "\\":
                if output and output[-1].endswith("\n"):
                    output[-1] = output[-1][:-1]
                continue
            if tag in (" ", "-"):
                if position >= len(lines) or lines[position].rstrip("\n") != text.rstrip("\n"):
                    return None
                if tag == " ":
                    output.append(lines[position])
                position += 1
            else:
                output.append(text)
    output += lines[position:]
    return "".join(output)
