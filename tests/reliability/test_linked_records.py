"""Memory records that are links, and record names held by something that is no file.

A user may keep a record elsewhere (a shared folder, another checkout) and link it into
memory/. Every kernelscope write of a record (update, mask, unmask, mask-half, create --force,
an iteration's record) used to rename its temp file onto the link: the link became a plain
file and its target kept the old content. A folder or a dangling link named `v<N>.json` made
writes fail with "Is a directory" or be replaced by a plain file.
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


def test_every_record_write_keeps_a_linked_record_a_link_and_writes_its_target(tmp_path: Path) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_record(ws, 0, performance={"latency_us": 10.0}, quality_gate={"result": "PASS"})
    targets = {
        version: _linked(
            ws,
            elsewhere,
            version,
            relative=version % 2 == 0,
            performance={"latency_us": 10.0 - version},
            quality_gate={"result": "PASS"},
            pitfalls_and_fixes=[],
        )
        for version in range(1, 7)
    }
    manager = MemoryManager(ws)

    def record(version: int) -> dict[str, object]:
        return json.loads(targets[version].read_text())

    manager.update("v1", ["agent_notes=updated"])
    assert record(1)["agent_notes"] == "updated"
    assert manager.set_masked(["v2", "v3"], True) == ["v2", "v3"]  # (one multi-file write)
    assert record(2)["masked"] is True and record(3)["masked"] is True
    assert manager.set_masked(["v2"], False) == ["v2"] and record(2)["masked"] is False
    result = manager.mask_half(None, seed=7)
    assert result.masked and all(record(int(v[1:]))["masked"] is True for v in result.masked)
    assert record(int(result.pitfall_recorded_in[1:]))["pitfalls_and_fixes"]  # type: ignore[index]
    manager.create("v4", force=True)
    assert "masked" in record(4) and record(4).get("performance") != {"latency_us": 6.0}
    manager.write_record("v5", {"masked": False, "agent_notes": "whole"}, overwrite=True)
    assert record(5) == {"version": "v5", "masked": False, "agent_notes": "whole"}

    for version, target in targets.items():
        link = ws / "memory" / f"v{version}.json"
        assert link.is_symlink() and link.resolve() == target.resolve(), version
    assert sorted(p.name for p in elsewhere.iterdir()) == [f"v{n}.json" for n in range(1, 7)]  # no temp file
    assert [p.name for p in (ws / "memory").iterdir() if p.name.startswith(".kernelscope-tmp")] == []


def test_a_linked_records_mode_is_kept(tmp_path: Path) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_record(ws, 0)
    target = _linked(ws, elsewhere, 1, relative=False)
    target.chmod(0o640)
    MemoryManager(ws).update("v1", ["a=1"])
    assert target.stat().st_mode & 0o777 == 0o640 and (ws / "memory" / "v1.json").is_symlink()


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
