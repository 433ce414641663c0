"""One parse per text. The daemon reads a saved kernel.py three ways (the history's fingerprint,
the static rules, the kernel scan for lenses and diagnostics), each from a syntax tree; on a
file of fifty kernels a parse is a third of a save check's time, so the three share one.

Trees are shared between readers and threads: read them, never change them (a rule that needs
a changed tree parses its own copy, as `kernels/sizing.py` does).
"""

from __future__ import annotations

import ast
from functools import lru_cache

# The texts in flight: the saved file and a buffer or two being typed. A tree of a
# thousand-line file is a few MB; older texts are parsed again if ever asked for.
_KEPT_TREES = 4


@lru_cache(maxsize=_KEPT_TREES)
def parse(text: str) -> ast.Module:
    """`text`'s module tree, shared with every other reader of the same text. Raises what
    `ast.parse` raises (SyntaxError, ValueError for NUL bytes...); a failure is not kept."""
    return ast.parse(text)
