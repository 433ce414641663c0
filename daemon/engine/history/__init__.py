"""What a workspace's history already knows, at the line being edited (issue #15).

Pure engine functions (no LSP, no CLI, never torch or triton, never workspace code) that the
daemon serves and `kernelscope blame` / `kernelscope compare` print:

- `blame_lines`: for each line of kernel.py, the version that introduced it and its measured
  effect against its parent (`BlameLine`);
- `tried_hints`: for each meta-parameter, the values earlier versions used there and their
  scores (`TriedHint`);
- `check_fingerprint`: whether the kernel being saved is one history already measured or
  failed (`FingerprintCheck`);
- `compare_versions`: two versions side by side (`VersionComparison`);
- `scores.version_score`: the one score of a version every surface shows.

`HistoryService` (or `history_service(root, db_url)`) caches everything per history state.
Names load on first use (PEP 562): the lens path imports `history.scores` alone.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "History": "timeline",
    "build_history": "timeline",
    "HistoryService": "service",
    "history_service": "service",
    "blame_line": "blame",
    "blame_lines": "blame",
    "tried_hints": "tried",
    "check_fingerprint": "fingerprint",
    "compare_versions": "compare",
    "comparison_markdown": "compare",
    "version_score": "scores",
    "score_value": "scores",
    "parent_effect": "scores",
    "score_table": "scores",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
