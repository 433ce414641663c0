"""The last text of a kernel.py that parsed, and where its lines are in the text now.

Between keystrokes (or an agent's partial writes) kernel.py often does not parse: an unclosed
bracket, a half-typed `def`. What the editor shows of the kernels (lens, summary hint, hover on
a name, the values already tried) then comes from the last text that parsed, moved to where its
lines are in the text as it is now, as pyright and jedi keep their last analysis instead of
blanking the screen. A line is placed only where it still is: an unchanged line by the common
head and tail of the two texts and a line diff of what lies between (when that is at most
MAX_DIFF_LINES), a kernel whose `def` line is being typed by the line that still defines it,
else by its unchanged decorator; a line that cannot be found shows nothing (a hint or lens on a line that
moved would name the wrong code, which is worse than none).

One `LastParse` per document: the daemon keeps one for the saved file and one for the editor's
buffer (engine/workspace/cache.py; a buffer with no parse of its own yet takes the file's),
and forgets the buffer's when the editor closes it.
"""

from __future__ import annotations

import difflib
import re
import threading
from dataclasses import dataclass, field
from functools import cached_property

from kernelscope.daemon.engine.workspace.kernel_scan import scan_kernel_source, too_large
from kernelscope.protocol.history import TriedHint
from kernelscope.protocol.text_positions import source_lines
from kernelscope.protocol.workspace import KernelInfo, KernelScan

DEF = re.compile(r"\s*(?:async\s+)?def\s+(\w+)")
MAX_DIFF_LINES = 1_000  # the largest changed part compared line by line (about 15 ms)


@dataclass(frozen=True)
class LineMap:
    """Lines (0-based) of `parsed`, the last text that parsed, as they are in the text now."""

    parsed: str
    now: str
    lines: list[str]  # now's
    moved: dict[int, int] = field(default_factory=dict)  # unchanged lines: line then -> line now

    @classmethod
    def between(cls, parsed: str, now: str) -> LineMap:
        """The unchanged lines: the common head and tail (one pass: an edit is mostly in one
        place), and what a line diff matches between them when that part is small (the diff
        is quadratic on repeated lines: 10,000 of them took a second, and held every request)."""
        before, after = source_lines(parsed), source_lines(now)
        head = 0
        for old, new in zip(before, after, strict=False):
            if old != new:
                break
            head += 1
        tail = 0
        while tail < min(len(before), len(after)) - head and before[-1 - tail] == after[-1 - tail]:
            tail += 1
        moved = {i: i for i in range(head)}
        moved.update({len(before) - 1 - k: len(after) - 1 - k for k in range(tail)})
        middle_before, middle_after = before[head : len(before) - tail], after[head : len(after) - tail]
        if max(len(middle_before), len(middle_after)) <= MAX_DIFF_LINES:
            matcher = difflib.SequenceMatcher(None, middle_before, middle_after, autojunk=False)
            for i, j, size in matcher.get_matching_blocks():
                moved.update({head + i + k: head + j + k for k in range(size)})
        return cls(parsed, now, after, moved)

    @cached_property
    def defines(self) -> dict[str, list[int]]:
        """Function name -> the lines of the text now that define it (one pass, made once)."""
        found: dict[str, list[int]] = {}
        for i, text in enumerate(self.lines):
            match = DEF.match(text)
            if match is not None:
                found.setdefault(match.group(1), []).append(i)
        return found

    def _defines_something(self, line: int) -> bool:
        """Whether the text now has a `def` (of any name, maybe half typed) on `line`."""
        return line < len(self.lines) and self.lines[line].lstrip().startswith(("def", "async"))

    def line(self, line: int) -> int | None:
        """Where an unchanged line is now (None: it changed or went)."""
        return self.moved.get(line)

    def tried(self, spots: list[TriedHint]) -> list[TriedHint]:
        """The parsed text's tried values where they are now; one on a line that changed is
        left out."""
        placed = []
        for spot in spots:
            line, end_line = self.line(spot.line), self.line(spot.end_line)
            if line is not None and end_line is not None:
                placed.append(spot.model_copy(update={"line": line, "end_line": end_line}))
        return placed

    def kernel(self, kernel: KernelInfo) -> KernelInfo | None:
        """`kernel` where it is now, None when neither its `def` nor its decorator is found."""
        def_then, decorator_then = kernel.def_line - 1, kernel.decorator_line - 1
        above = def_then - decorator_then  # how far its first decorator is above its `def`
        def_now = self.line(def_then)
        if def_now is None:  # the `def` line is the one being typed: the line that still defines it
            found = self.defines.get(kernel.name, [])
            decorator_now = self.line(decorator_then)
            if len(found) == 1:
                def_now = found[0]
            elif decorator_now is not None and self._defines_something(decorator_now + above):
                def_now = decorator_now + above  # (its name half typed) below its unchanged decorator
            else:
                return None
        # The decorator as far above the `def` as it was, never where the line map put a line like
        # it: a kernel typed above this one begins with the same `@triton.jit`, which the map can
        # match to this kernel's, and the lens (drawn above the decorator) went to the new kernel.
        decorator_now = max(0, def_now - above)
        end_now = self.line(kernel.end_line - 1)
        if end_now is None:
            end_now = def_now + kernel.end_line - kernel.def_line
        text = self.lines[def_now] if def_now < len(self.lines) else ""
        column = text.find("def " + kernel.name)
        return kernel.model_copy(
            update={
                "def_line": def_now + 1,
                "decorator_line": decorator_now + 1,
                "end_line": end_now + 1,
                "name_column": column + 4 if column >= 0 else kernel.name_column,
            }
        )


class LastParse:
    """One document's last text that parsed (module docstring). Thread-safe: pool handlers
    scan on several threads."""

    def __init__(self, fallback: LastParse | None = None) -> None:
        self._lock = threading.Lock()
        # whose last parse counts while this document has none of its own (a buffer opened
        # with a text that does not parse: the saved file's)
        self._fallback = fallback
        self._parsed: str | None = None
        self._map: LineMap | None = None  # the last map made (a hover, then hints, on one text)

    def scan(self, text: str, path: str = "kernel.py") -> tuple[KernelScan, LineMap | None]:
        """The kernels of `text`; while it does not parse, the last parsed text's kernels where
        they are now, beside the error, and the map that placed them (None: `text` parsed, or
        nothing did yet, or it is too large to compare)."""
        scan = scan_kernel_source(text, path)
        if scan.error is None:
            with self._lock:
                self._parsed, self._map = text, None
            return scan, None
        moved = self.line_map(text)
        if moved is None:
            return scan, None
        placed = map(moved.kernel, scan_kernel_source(moved.parsed, path).kernels)
        kernels = [kernel for kernel in placed if kernel is not None]
        return scan.model_copy(update={"kernels": kernels}), moved

    def parsed(self) -> str | None:
        """The last text that parsed (this document's, else its fallback's)."""
        with self._lock:
            own = self._parsed
        return own if own is not None or self._fallback is None else self._fallback.parsed()

    def line_map(self, text: str) -> LineMap | None:
        """The last parsed text's lines in `text` (None: none parsed yet, or a text too large
        for the editor's reads)."""
        parsed, kept = self.parsed(), self._map
        if parsed is None or too_large(text) is not None:
            return None
        if kept is not None and kept.parsed is parsed and kept.now == text:
            return kept
        made = LineMap.between(parsed, text)
        with self._lock:
            self._map = made
        return made

    def forget(self) -> None:
        """The document is gone (the editor closed it): its texts are not kept."""
        with self._lock:
            self._parsed, self._map = None, None
