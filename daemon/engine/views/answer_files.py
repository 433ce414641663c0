"""Where a command's markdown answer goes for a client that drops executeCommand's answers
(Helix): a file in the user's state directory, never in a workspace (kernelscope only observes
those), under a new name each time (Helix keeps showing the buffer it has open for an old
name), unique among daemons (two Helix sessions on checkouts of one name), and this daemon's
earlier answer of the same command removed so the folder does not grow with each command."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kernelscope.daemon.engine import WriteFailed
from kernelscope.daemon.engine.workspace.user_config import state_dir

# this daemon's last answer file per workspace and command (another daemon's, a second Helix
# on a checkout of the same name, are its own: names are made unique, never counted)
_ANSWERED: dict[str, Path] = {}


def write_answer(workspace: str | None, command: str, markdown: str) -> Path:
    """The file now holding `markdown`, the answer of `command` about `workspace`; WriteFailed
    naming the folder when it cannot be written (nothing of this daemon's removed then)."""
    base = state_dir("answers")
    stem = f"{Path(workspace or 'kernelscope').name}-{command.removeprefix('kernelscope.')}"
    try:
        base.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f"{stem}-", suffix=".md", dir=base)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(markdown)
        path = Path(name)
        earlier = _ANSWERED.get(stem)
        _ANSWERED[stem] = path
        if earlier is not None:
            earlier.unlink(missing_ok=True)
    except OSError as exc:
        raise WriteFailed(f"cannot write {base}: {exc}") from None
    return path
