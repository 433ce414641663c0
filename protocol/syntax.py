"""One parse per text. The daemon reads a saved kernel.py three ways (the history's fingerprint,
the static rules, the kernel scan for lenses and diagnostics), each from a syntax tree; on a
file of fifty kernels a parse is a third of a save check's time, so the three share one.

Trees are shared between readers and threads: read them, never change them (a rule that needs
a changed tree parses its own copy, as `kernels/sizing.py` does).
"""

from __future__ import annotations

import ast
from functools import lru_cache

# The text in flight (the saved file: its verdict, then its lint 50 ms later). A kept tree is
# tens of thousands of live objects the daemon's garbage collector walks on every collection
# until it is evicted: with four kept, a save's check took 3-5 ms longer (lsp_bench.py).
_KEPT_TREES = 1


@lru_cache(maxsize=_KEPT_TREES)
def parse(text: str) -> ast.Module:
    """`text`'s module tree, shared with every other reader of the same text. Raises what
    `ast.parse` raises (SyntaxError, ValueError for NUL bytes...); a failure is not kept."""
    return ast.parse(text)
