"""Where a spot in kernel.py is, counted the way its readers count: the one rule for lines and
columns that the daemon (inlay hints, blame, diagnostics) and the static rules share.

Python's parser breaks lines at \\n, \\r\\n and \\r and gives columns in UTF-8 bytes; editors
break lines at the same three and, after the LSP layer's last step, count UTF-16 units. In
between, kernelscope counts characters (code points), as Python's str does.

A UTF-8 byte order mark before the first line is no character of the source: Python's decoder
drops it (a file starting with one imports fine) and so do editors (neither counts it in line
1's columns), so every reader of kernel.py text drops it too, through `python_text`."""

from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"


def python_text(text: str) -> str:
    """The text Python's parser reads: without a leading byte order mark (`ast.parse` on a str
    rejects it as "invalid non-printable character U+FEFF"). Call it before `ast.parse`."""
    return text[len(_BOM) :] if text.startswith(_BOM) else text


def source_lines(text: str) -> list[str]:
    """kernel.py's lines as editors (LSP positions), Python's parser and git count them:
    broken at \\n, \\r\\n and \\r only. `str.splitlines` also breaks at a form feed (^L, a
    page break some style guides use), \\v and Unicode separators, which put every later line
    one off from the line numbers the scan and git give."""
    lines = _LINE_BREAK.split(python_text(text))
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
