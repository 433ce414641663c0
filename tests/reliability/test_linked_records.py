"""Memory records that are links, and record names held by something that is no file.

A record linked into memory/ (kept in a shared folder, another checkout) is read through its
link. Every kernelscope write of a record (update, mask, unmask, mask-half, create --force, an
iteration's record) used to rename its temp file onto the link: the link became a plain file
and its target kept the old content; writing the target instead (a merge of this session) let
a cloned workspace's link aim a write at .git/config or another workspace's record. Every write
now refuses a link, nothing changed. A folder or a dangling link named `v<N>.json` made writes
fail with "Is a directory" or be replaced by a plain file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kernelscope.daemon.engine import DataError
from kernelscope.daemon.engine.memory.atomic_io import atomic_write_all
from kernelscope.daemon.engine.memory.core import JOURNAL_NAME
from kernelscope.daemon.engine.memory.records import MemoryManager
from tests.conftest import write_record


def _linked(ws: Path, elsewhere: Path, version: int, relative: bool, **fields: object) -> Path:
    """memory/v<version>.json, a link to a record kept in `elsewhere`; the record's path."""
    target = elsewhere / f"v{version}.json"
    target.write_text(json.dumps({"version": f"v{version}", **fields}, indent=2) + "\n")
    link = ws / "memory" / target.name
    link.symlink_to(Path("..", "..", elsewhere.name, target.name) if relative else target)
    return target


def test_every_record_write_refuses_a_linked_record_and_changes_nothing(tmp_path: Path) -> None:
    """A record that is a link is read through it and never written through it: its target
    may be anything a cloned workspace points at (.git/config, a file of the user's, another
    workspace's record guarded by that workspace's lock). Every write refuses, naming the
    link; the link, its target and every other record stay as they were."""
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_record(ws, 0, performance={"latency_us": 10.0}, quality_gate={"result": "PASS"})
    for version in range(1, 7):
        _linked(
            ws,
            elsewhere,
            version,
            relative=version % 2 == 0,
            performance={"latency_us": 10.0 - version},
            quality_gate={"result": "PASS"},
            pitfalls_and_fixes=[],
        )
    manager = MemoryManager(ws)
    assert [e.version for e in manager.scan() if e.error is None] == [f"v{n}" for n in range(7)]  # read

    def everything() -> dict[str, bytes]:
        paths = [*elsewhere.iterdir(), *(ws / "memory").iterdir()]
        files = {p: p.read_bytes() for p in paths if p.name != ".kernelscope.lock"}  # (a writer's lock)
        return {f"{p}{'@' if p.is_symlink() else ''}": b for p, b in files.items()}

    before = everything()
    writes = [
        lambda: manager.update("v1", ["agent_notes=updated"]),
        lambda: manager.set_masked(["v2", "v3"], True),
        lambda: manager.mask_half(None, seed=7),
        lambda: manager.create("v4", force=True),
        lambda: manager.write_record("v5", {"masked": False}, overwrite=True),
    ]
    for write in writes:
        with pytest.raises(
            DataError, match=r"it is a link \(to .*v\d\.json\), and kernelscope writes nothing"
        ):
            write()
        assert everything() == before
    assert not (ws / "memory" / JOURNAL_NAME).exists()


def test_a_journal_never_writes_through_a_link(tmp_path: Path) -> None:
    """A cut-short write's journal names v1.json, a link to .git/config in a cloned workspace:
    the next writer's replay leaves the link and its target alone (before, it wrote the
    journal's text into .git/config, whose core.fsmonitor git then runs)."""
    ws = tmp_path / "ws"
    write_record(ws, 0)
    config = ws / ".git" / "config"
    config.parent.mkdir()
    config.write_text("[core]\n\tbare = false\n")
    (ws / "memory" / "v1.json").symlink_to(Path("..", ".git", "config"))
    hostile = "[core]\n\tfsmonitor = touch pwned; false\n"
    (ws / "memory" / JOURNAL_NAME).write_text(json.dumps({"files": {"v1.json": hostile}}))
    MemoryManager(ws).update("v0", ["agent_notes=after"])
    assert config.read_text() == "[core]\n\tbare = false\n" and (ws / "memory" / "v1.json").is_symlink()
    assert not (ws / "memory" / JOURNAL_NAME).exists()


@pytest.mark.parametrize("kind", ["folder", "dangling link"])
def test_a_multi_file_write_with_a_name_held_by_no_file_writes_nothing(tmp_path: Path, kind: str) -> None:
    """Checked before anything is written: a refusal half-way would leave the first files
    written (and a journal the next writer would finish)."""
    ws = tmp_path / "ws"
    first = write_record(ws, 1, masked=False)
    before = first.read_bytes()
    second = ws / "memory" / "v2.json"
    if kind == "folder":
        second.mkdir()
    else:
        second.symlink_to(tmp_path / "missing.json")
    with pytest.raises(
        DataError, match=f"v2.json: it is a {'folder' if kind == 'folder' else 'link to a missing file'}"
    ):
        atomic_write_all([(first, "{}\n"), (second, "{}\n")])
    assert first.read_bytes() == before and not (ws / "memory" / JOURNAL_NAME).exists()
    assert not (tmp_path / "missing.json").exists() and (second.is_dir() or second.is_symlink())


def test_a_cut_short_write_whose_file_became_a_folder_is_finished_without_it(tmp_path: Path) -> None:
    """A journal naming v2.json, which someone has since replaced with a folder: the next
    writer finished the journal by reading v2.json and failed (IsADirectoryError), and so did
    every write after it. Now the folder is kept, as another writer's later change is."""
    ws = tmp_path / "ws"
    first = write_record(ws, 1, masked=False)
    (ws / "memory" / "v2.json").mkdir()
    new = json.dumps({"version": "v1", "masked": True}) + "\n"
    digest = hashlib.sha256(first.read_bytes()).hexdigest()
    journal = {"files": {"v1.json": new, "v2.json": "{}\n"}, "before": {"v1.json": digest, "v2.json": None}}
    (ws / "memory" / JOURNAL_NAME).write_text(json.dumps(journal))
    MemoryManager(ws).update("v1", ["agent_notes=after"])
    assert json.loads(first.read_text()) == {"version": "v1", "masked": True, "agent_notes": "after"}
    assert (ws / "memory" / "v2.json").is_dir() and not (ws / "memory" / JOURNAL_NAME).exists()


def test_a_memory_folder_that_is_a_link_is_never_written_through(tmp_path: Path) -> None:
    """A cloned workspace's memory/ a link to another workspace's: every write landed there,
    under the clone's lock, not that workspace's (the third review). Refused, nothing changed."""
    victim, clone = tmp_path / "victim", tmp_path / "clone"
    write_record(victim, 0)
    write_record(victim, 1, masked=False)
    clone.mkdir()
    (clone / "memory").symlink_to(Path("..", "victim", "memory"))
    before = {p.name: p.read_bytes() for p in (victim / "memory").iterdir()}
    manager = MemoryManager(clone)
    assert [e.version for e in manager.scan()] == ["v0", "v1"]  # (read through it)
    for write in (
        lambda: manager.update("v1", ["agent_notes=through"]),
        lambda: manager.set_masked(["v1"], True),
        lambda: manager.create("v2"),
    ):
        with pytest.raises(DataError, match=r"its folder .*memory is a link"):
            write()
    after = {p.name: p.read_bytes() for p in (victim / "memory").iterdir() if p.name != ".kernelscope.lock"}
    assert after == before


def test_a_journal_that_is_a_link_is_never_opened(tmp_path: Path) -> None:
    """memory/.kernelscope-journal.json committed as a link to /dev/stdin (here a FIFO nobody
    writes): every read opened it and blocked, the daemon reading its own JSON-RPC input as
    the journal. kernelscope writes its journal as a plain file: a link is not its own."""
    import os
    import threading

    ws = tmp_path / "ws"
    write_record(ws, 0)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (ws / "memory" / JOURNAL_NAME).symlink_to(fifo)
    found: list[list[str]] = []
    reader = threading.Thread(target=lambda: found.append([e.version for e in MemoryManager(ws).scan()]))
    reader.start()
    reader.join(10)
    blocked = reader.is_alive()
    if blocked:  # (release the read the code before this fix blocked in)
        with open(fifo, "w") as end:
            end.write("{}")
        reader.join(10)
    assert not blocked and found == [["v0"]]
    assert (ws / "memory" / JOURNAL_NAME).is_symlink()  # a read removes nothing
