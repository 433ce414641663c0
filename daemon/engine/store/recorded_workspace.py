"""The one rule for the workspace an experiment is filed under by a person or a script
(`exp record -w`, `exp update --set workspace=`, expdb's `create_experiment` and
`update_experiment`): a workspace as the reads of the history take one (a workspace, or a
folder holding memory/), resolved. Anything else, a typo first of all, would file the
experiment where no lens or read of the workspace looks. Imports (`exp import`,
`import-traces -w`, adopting another store) keep the path their records name: those were
recorded elsewhere, and the reads find them by that path."""

from __future__ import annotations

from pathlib import Path

from kernelscope.daemon.engine import DataError
from kernelscope.daemon.engine.store.errors import NotAWorkspace


def recorded_workspace(path: str, unchanged: str = "nothing recorded") -> str:
    """`path` resolved, or the one not-a-workspace error (workspace/discovery.py's), saying
    `unchanged` (what was not written) and where an experiment of another machine goes."""
    from kernelscope.daemon.engine.workspace.discovery import require_workspace

    try:
        return str(require_workspace(Path(path), need="history"))
    except DataError as exc:
        raise NotAWorkspace(
            f"{exc}; {unchanged} (an experiment of a workspace that is not on this machine is "
            "imported instead: exp import FILE)"
        ) from None
