"""The version a partial restart promised its agent, and whether it is still to be recorded
(daemon/engine/workflows/iterate.py refuse_if_promised): by the one rule of "a version name is
taken" that `next-version` counts by (memory/core.py version_taken)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kernelscope.daemon.engine import DataError
from kernelscope.daemon.engine.memory.atomic_io import RESTART_LOCK_NAME, lock_dir_of, workspace_lock
from kernelscope.daemon.engine.memory.records import MemoryManager
from kernelscope.daemon.engine.workflows.iterate import refuse_if_promised
from tests.conftest import EXAMPLES

MARK = {"by": "restart", "id": "r1", "next_version": "v5", "at": "2026-12-07T00:00:00+00:00", "seed": 1}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", root)
    for command in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v0-v4"],
    ):
        subprocess.run(["git", *command], cwd=root, check=True)
    return root


@pytest.mark.parametrize("held_by", ["nothing", "dangling link", "folder", "leading zeros"])
def test_a_promised_version_whose_name_is_taken_is_no_longer_promised(ws: Path, held_by: str) -> None:
    """memory/v5.json a link to a missing file: `next-version` says v6 (the name holds v5,
    listed as unreadable), yet the check of the restart's promise asked `path.exists()`,
    False for a dangling link, and refused every other iteration while the restart ran, for
    a v5 nobody can record. The name taken by whatever holds it, as next-version counts it,
    ends the promise; with nothing there the promise holds (the refusal)."""
    held = ws / "memory" / "v5.json"
    if held_by == "dangling link":
        held.symlink_to(ws / "gone.json")
    elif held_by == "folder":
        held.mkdir()
    elif held_by == "leading zeros":
        (ws / "memory" / "v05.json").write_text('{"version": "v5"}')
    memory = MemoryManager(ws)
    with workspace_lock(lock_dir_of(ws), 1.0, RESTART_LOCK_NAME):  # the restart runs
        if held_by == "nothing":
            assert memory.next_version() == "v5"
            with pytest.raises(DataError, match="gave v5 to the agent it started"):
                refuse_if_promised(memory, MARK, None, measured=False)
            return
        assert memory.next_version() == "v6", held_by
        refuse_if_promised(memory, MARK, None, measured=False)  # not refused: v5 is taken


def test_asking_whether_a_restart_runs_writes_nothing(ws: Path) -> None:
    """The editor's mask-half question asks whether a restart runs before the person says yes:
    asking made .git/kernelscope/ and its restart lock file (the third review: the question's
    docstring promised "not even a lock file"). Now a shared probe of a file a restart made:
    none, no restart; held by one, it runs."""
    from kernelscope.daemon.engine.memory.atomic_io import restart_in_flight
    from tests.support.locks import held_on_a_thread

    lock_dir = lock_dir_of(ws)
    assert not lock_dir.exists()
    assert restart_in_flight(ws) is False
    assert not lock_dir.exists()
    with held_on_a_thread(lambda: workspace_lock(lock_dir, name=RESTART_LOCK_NAME)):
        assert restart_in_flight(ws) is True
    assert restart_in_flight(ws) is False  # (its report given: the lock released, the file left)
