"""Where a spot in kernel.py is, counted the way its readers count: the one rule for lines and
columns that the daemon (inlay hints, blame, diagnostics) and the static rules share.

Python's parser breaks lines at \\n, \\r\\n and \\r and gives columns in UTF-8 bytes; editors
break lines at the same three and, after the LSP layer's last step, count UTF-16 units. In
between, kernelscope counts characters (code points), as Python's str does."""

from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """kernel.py's lines as editors (LSP positions), Python's parser and git count them:
    broken at \\n, \\r\\n and \\r only. `str.splitlines` also breaks at a form feed (^L, a
    page break some style guides use), \\v and Unicode separators, which put every later line
    one off from the line numbers the scan and git give."""
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class Columns:
    """ast's columns (UTF-8 byte offsets) of one text as characters, line by line."""

    def __init__(self, text: str) -> None:
        self.lines = source_lines(text)

    def char(self, line: int, byte_col: int) -> int:
        """The character column of byte `byte_col` on 1-based `line` (as given: past the end)."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def span(self, line: int, column: int, end_line: int, end_column: int) -> tuple[int, int, int, int]:
        """A range in ast's columns with its columns as characters."""
        return line, self.char(line, column), end_line, self.char(end_line, end_column)
