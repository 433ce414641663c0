"""The one rule that says a folder is an optimization workspace (protocol/vocabulary.py's
WORKSPACE_RULE: kernel.py, and memory/ or a README line opening a ```kernelscope fence).

Light on purpose: the daemon asks it for every folder the editor opens, before anything else
of the engine is imported (initialize stays as fast as a bare pygls server's). The editor
clients apply the same rule, read as data from editor-clients/commands.json."""

from __future__ import annotations

import re
from pathlib import Path

from kernelscope.protocol.vocabulary import WORKSPACE_DIRS, WORKSPACE_FENCE, WORKSPACE_FILES, WORKSPACE_README

_FENCE_OPENING = re.compile(r"^\s*(```+|~~~+)\s*(\S+)\s*$")


def is_optimization_workspace(path: Path) -> bool:
    """Every required file, and a required folder or a README line opening the tagged fence.
    Cheap checks first: the README is read only when the folders are missing."""
    if not all((path / name).is_file() for name in WORKSPACE_FILES):
        return False
    if any((path / name).is_dir() for name in WORKSPACE_DIRS):
        return True
    try:
        with (path / WORKSPACE_README).open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                match = _FENCE_OPENING.match(line)
                if match and match.group(2) == WORKSPACE_FENCE:
                    return True
    except OSError:
        return False
    return False
