"""A folder that is not a workspace: the one error from every command that reads one (exit 2,
one JSON error document under --json), `memory summary` and the `exp` reads filtered by
`-w` included; a moved or deleted workspace's experiments stay readable by its old path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOT_A_WORKSPACE = "is not an optimization workspace"


def _db(tmp_path: Path) -> str:
    return str(tmp_path / "exp.sqlite")


def _record(cli, ws: Path, db: str) -> None:  # type: ignore[no-untyped-def]
    recorded = cli(
        "exp", "record", "-m", "tiling", "--score", "1.2", "--kernel", "add_kernel", "-w", str(ws), "--db", db
    )
    assert recorded.exit_code == 0, recorded.stderr


def _import(cli, folder: Path, db: str) -> None:  # type: ignore[no-untyped-def]
    """An experiment recorded under `folder`, which is no workspace here (`exp record -w`
    refuses one: such a record comes by `exp import`)."""
    lines = Path(db).with_name(f"{folder.name}.jsonl")
    record = {"id": folder.name, "change_summary": "tiling", "score": 1.2, "kernels": ["add_kernel"]}
    lines.write_text(json.dumps({**record, "workspace": str(folder)}) + "\n")
    imported = cli("exp", "import", str(lines), "--db", db)
    assert imported.exit_code == 0, imported.stderr


def _commands(folder: Path, db: str) -> list[tuple[str, ...]]:
    return [
        ("memory", "summary", "-w", str(folder)),
        ("exp", "summary", "-w", str(folder), "--db", db),
        ("exp", "top", "-w", str(folder), "--db", db),
        ("exp", "list", "-w", str(folder), "--db", db),
        ("exp", "failures", "-w", str(folder), "--db", db),
    ]


@pytest.mark.parametrize("folder", ["empty", "missing"])
def test_every_read_refuses_a_folder_that_is_not_a_workspace(tmp_path: Path, cli, folder: str) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / folder
    if folder == "empty":
        target.mkdir()
    db = _db(tmp_path)
    _import(cli, tmp_path / "elsewhere", db)  # the store exists and holds another folder's row
    for args in _commands(target, db):
        plain = cli(*args)
        assert plain.exit_code == 2 and NOT_A_WORKSPACE in plain.stderr, (args, plain.stdout, plain.stderr)
        assert plain.stdout == "", args
        document = cli(*args, "--json")
        assert document.exit_code == 2, (args, document.stdout)
        error = document.json()["error"]
        assert error["kind"] == "data" and NOT_A_WORKSPACE in error["message"], (args, error)
        assert str(target) in error["message"], (args, error)


def test_a_moved_workspaces_experiments_are_read_with_a_note(
    tmp_path: Path, vector_add_ws: Path, cli
) -> None:  # type: ignore[no-untyped-def]
    db = _db(tmp_path)
    _record(cli, vector_add_ws, db)
    here = cli("exp", "top", "-w", str(vector_add_ws), "--db", db, "--json")
    assert here.exit_code == 0 and len(here.json()) == 1 and "no longer exists" not in here.stderr
    vector_add_ws.rename(tmp_path / "moved")
    for args in _commands(vector_add_ws, db)[1:]:
        shown = cli(*args, "--json")
        assert shown.exit_code == 0, (args, shown.stdout, shown.stderr)
        assert shown.json(), args  # its rows, under the path they were recorded by
        assert f"{vector_add_ws} no longer exists" in shown.stderr, (args, shown.stderr)
        table = cli(*args)
        assert table.exit_code == 0 and f"{vector_add_ws} no longer exists" in table.stdout, args
    # memory summary reads the folder itself: gone is gone
    assert cli("memory", "summary", "-w", str(vector_add_ws)).exit_code == 2


def test_a_folder_the_store_holds_experiments_for_is_read_with_a_note(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`exp import` and `import-traces -w` record under any folder (their docs say `exp
    top/list/summary` show them); the first version of the not-a-workspace rule refused such a
    folder because it existed (found by the review: exit 2 where it was 0). It is read, saying
    it is not a workspace; one the store knows nothing of is still the one error."""
    db = _db(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _import(cli, other, db)
    for args in _commands(other, db)[1:]:
        shown = cli(*args, "--json")
        assert shown.exit_code == 0 and shown.json(), (args, shown.stdout, shown.stderr)
        assert f"{other} is not a workspace (no kernel.py" in shown.stderr, (args, shown.stderr)


def test_a_path_the_system_cannot_look_at_is_the_one_error(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A name too long for the file system raised OSError from pathlib, a traceback with exit 1
    even under --json (found by the review); it is the one error, naming why."""
    db = _db(tmp_path)
    _import(cli, tmp_path / "elsewhere", db)
    too_long = tmp_path / ("a" * 300)
    for args in _commands(too_long, db):
        document = cli(*args, "--json")
        assert document.exit_code == 2, (args, document.stdout, document.stderr)
        error = document.json()["error"]
        assert error["kind"] == "data" and "cannot be read: File name too long" in error["message"], error


def test_the_error_says_the_way_out_once(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The error said what is missing but not what to do: now it names -w, `kernelscope memory
    init` and `kernelscope demo`, once; inside a workspace it names that workspace instead."""
    empty = tmp_path / "empty"
    empty.mkdir()
    done = cli("memory", "summary", "-w", str(empty))
    assert done.exit_code == 2
    assert done.stderr.count("-w ") == 1 and "`kernelscope memory init`" in done.stderr, done.stderr
    assert done.stderr.count("`kernelscope demo`") == 1, done.stderr
