"""A folder that is not a workspace: the one error from every command that reads one (exit 2,
one JSON error document under --json), `memory summary` and the `exp` reads filtered by
`-w` included; a moved or deleted workspace's experiments stay readable by its old path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

NOT_A_WORKSPACE = "is not an optimization workspace"
ELSEWHERE = "pass -w DIR for a workspace elsewhere"  # every CLI way out offers it


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
    said = " ".join(done.stderr.split())
    assert said.count("-w DIR") == 1 and f"`kernelscope memory init -w {empty}`" in said, said
    assert done.stderr.count("`kernelscope demo`") == 1, done.stderr


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _sol_problem(tmp_path: Path) -> Path:
    """A SOL-ExecBench problem folder as published: no memory/, no README block."""
    folder = tmp_path / "rmsnorm"
    shutil.copytree(FIXTURES / "sol-execbench" / "rmsnorm", folder)
    return folder


def _kernelbench_problem(tmp_path: Path) -> Path:
    """A KernelBench problem whose problem file is the folder's reference.py, and a kernel.py."""
    folder = tmp_path / "level1_gelu"
    folder.mkdir()
    shutil.copy(FIXTURES / "kernelbench" / "26_GELU_.py", folder / "reference.py")
    (folder / "kernel.py").write_text("class ModelNew:\n    pass\n")
    return folder


@pytest.mark.parametrize(
    ("make", "kind", "words"),
    [
        (_sol_problem, "sol-execbench", "a SOL-ExecBench problem"),
        (_kernelbench_problem, "kernelbench", "a KernelBench problem"),
    ],
)
def test_a_problem_folder_is_named_with_what_runs_on_it_and_memory_init_makes_it_a_workspace(
    tmp_path: Path, cli, make, kind: str, words: str
) -> None:  # type: ignore[no-untyped-def]
    """A bare problem folder (kernel.py, no memory/, no README block) is no workspace by the one
    rule: the error told it to "add kernel.py" (it has one) and did not say that `bench` runs
    there as it is. It names what the folder looks like and the two commands that apply;
    `memory init` then writes memory/ alone and `workspace` reports the folder's kind."""
    folder = make(tmp_path)
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    for command in (("workspace",), ("check",)):
        refused = cli(*command, "-w", str(folder))
        assert refused.exit_code == 2 and NOT_A_WORKSPACE in refused.stderr, refused.stderr
        said = " ".join(refused.stderr.split())
        assert (
            f"it looks like {words}: `kernelscope bench -w {folder}` runs on it as it is; "
            f"`kernelscope memory init -w {folder}` makes it a workspace" in said
        ), said
        assert "add kernel.py" not in said and "start one here" not in said, said
    assert cli("memory", "init", "-w", str(folder)).exit_code == 0
    after = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    assert [p for p in after if p not in before] == [Path("memory")]
    shown = cli("workspace", "-w", str(folder), "--json")
    assert shown.exit_code == 0 and shown.json()["kind"] == kind, shown.stdout


def test_the_way_out_says_only_what_applies_to_the_folder(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A folder holding kernel.py was told to add kernel.py; a path that does not exist was told
    to start a workspace "here". Each now hears only what applies: memory init for the first,
    -w or the demo for the second; an empty folder still hears all three."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "kernel.py").write_text("x = 1\n")
    said = " ".join(cli("workspace", "-w", str(plain)).stderr.split())
    assert "(no memory/ and no README.md" in said, said
    assert "add kernel.py" not in said and f"`kernelscope memory init -w {plain}` to make this one" in said, (
        said
    )
    assert "looks like" not in said, said  # no kind is recognised in it
    missing = tmp_path / "missing"
    said = " ".join(cli("workspace", "-w", str(missing)).stderr.split())
    assert "(no such directory)" in said and "-w DIR" in said and "`kernelscope demo`" in said, said
    assert "start one here" not in said and "memory init" not in said, said
    empty = tmp_path / "empty"
    empty.mkdir()
    said = " ".join(cli("memory", "list", "-w", str(empty)).stderr.split())
    assert "(no memory/)" in said, said  # the memory commands need memory/ alone
    assert f"add kernel.py and run `kernelscope memory init -w {empty}` to start one in it" in said, said


def test_the_editor_s_way_out_fits_the_folder_too(tmp_path: Path) -> None:
    """The editor's words (its own gestures, never a CLI option) follow the same folder facts:
    a folder with kernel.py is told to add memory/ alone, a missing one only to open a workspace."""
    from kernelscope.daemon.engine.workspace.discovery import missing_parts, not_a_workspace

    problem = _sol_problem(tmp_path)
    said = not_a_workspace(problem, missing_parts(problem), "editor")
    assert "it looks like a SOL-ExecBench problem" in said and "add memory/ to this one" in said, said
    assert "kernel.py and memory/ to" not in said and "-w" not in said, said
    gone = tmp_path / "gone"
    said = not_a_workspace(gone, missing_parts(gone), "editor")
    assert said.endswith("; open a workspace's folder in the editor"), said


def test_a_large_reference_is_not_parsed_for_the_hint(tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The hint is a courtesy on an error path, yet it parsed reference.py in full: a 6.5 MB one
    made `memory list -w` take 8.7 s and 1.1 GB, a 55 MB one over 88 s and 8.2 GB. A reference
    over the hint's size limit is not parsed: no kind is named, the error is the same."""
    import ast

    from kernelscope.daemon.engine.workspace import discovery

    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "kernel.py").write_text("x = 1\n")
    head = "class Model:\n    pass\n\n\ndef get_inputs():\n    return []\n"
    (folder / "reference.py").write_text(head + "# pad\n" * (discovery.HINT_PARSE_LIMIT // 6 + 1))
    parsed: list[int] = []
    real_parse = ast.parse
    monkeypatch.setattr(
        ast, "parse", lambda source, *a, **k: parsed.append(len(source)) or real_parse(source, *a, **k)
    )
    said = " ".join(cli("memory", "list", "-w", str(folder)).stderr.split())
    assert NOT_A_WORKSPACE in said and "looks like" not in said, said
    assert not [n for n in parsed if n > discovery.HINT_PARSE_LIMIT], parsed
    (folder / "reference.py").write_text(head)  # the same module, small: recognised
    said = " ".join(cli("memory", "list", "-w", str(folder)).stderr.split())
    assert "it looks like a KernelBench problem" in said, said


@pytest.mark.parametrize("command", [("memory", "list"), ("memory", "summary"), ("memory", "next-version")])
def test_a_workspace_with_no_records_yet_is_called_one(tmp_path: Path, cli, command: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    """kernel.py and a README ```kernelscope block make a workspace by the one rule (`workspace`
    reads it), yet the memory commands said it "is not an optimization workspace (no memory/)"."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel.py").write_text("x = 1\n")
    (ws / "README.md").write_text('# op\n\n```kernelscope\n{"stop_conditions": ["latency <= 50 us"]}\n```\n')
    assert cli("workspace", "-w", str(ws)).exit_code == 0
    refused = cli(*command, "-w", str(ws))
    said = " ".join(refused.stderr.split())
    assert refused.exit_code == 2 and NOT_A_WORKSPACE not in said, said
    assert "is an optimization workspace with no records yet (no memory/)" in said, said
    assert f"run `kernelscope memory init -w {ws}` to start its memory/" in said, said


def test_a_kernelbench_problem_file_under_its_own_name_is_recognised(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """KernelBench names its problem files by number and name (level1/26_GELU_.py, defining
    Model, get_inputs, get_init_inputs); the hint recognised one only as reference.py, so a
    folder holding kernel.py and 26_GELU_.py was "no kind recognised". The kinds rule now reads
    the folder's other modules as the reference, and the hint names the file and the command
    that measures it; a module no kind recognises names nothing."""
    folder = tmp_path / "gelu"
    folder.mkdir()
    shutil.copy(FIXTURES / "kernelbench" / "26_GELU_.py", folder / "26_GELU_.py")
    (folder / "kernel.py").write_text("class ModelNew:\n    pass\n")
    (folder / "helpers.py").write_text("def pad(x):\n    return x\n")
    said = " ".join(cli("workspace", "-w", str(folder)).stderr.split())
    assert (
        f"it looks like a KernelBench problem (26_GELU_.py): `kernelscope bench -w {folder} --reference "
        f"26_GELU_.py` runs on it as it is; `kernelscope memory init -w {folder}` makes it a workspace"
        in said
    ), said
    (folder / "26_GELU_.py").unlink()
    said = " ".join(cli("workspace", "-w", str(folder)).stderr.split())
    assert NOT_A_WORKSPACE in said and "looks like" not in said, said


def test_the_hint_s_commands_run_from_where_the_user_is(tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`kernelscope workspace -w DIR` from elsewhere was told `kernelscope bench --reference
    26_GELU_.py`, which there measures another folder (or none): the hint's commands carry
    -w DIR, except where the user is in that folder."""
    folder = tmp_path / "gelu"
    folder.mkdir()
    shutil.copy(FIXTURES / "kernelbench" / "26_GELU_.py", folder / "26_GELU_.py")
    (folder / "kernel.py").write_text("class ModelNew:\n    pass\n")
    said = " ".join(cli("workspace", "-w", str(folder)).stderr.split())
    assert f"`kernelscope bench -w {folder} --reference 26_GELU_.py` runs on it" in said, said
    assert f"`kernelscope memory init -w {folder}` makes it a workspace" in said, said
    monkeypatch.chdir(folder)
    said = " ".join(cli("workspace").stderr.split())
    assert "`kernelscope bench --reference 26_GELU_.py` runs on it" in said, said
    assert "`kernelscope memory init` makes it a workspace" in said, said


def _parsed_sizes(monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    import ast

    parsed: list[int] = []
    real_parse = ast.parse
    monkeypatch.setattr(
        ast, "parse", lambda source, *a, **k: parsed.append(len(source)) or real_parse(source, *a, **k)
    )
    return parsed


@pytest.mark.parametrize("surface", ["cli", "editor"])
def test_the_hint_parses_no_module_that_lacks_the_names_a_kind_asks_for(
    tmp_path: Path, monkeypatch, surface: str
) -> None:  # type: ignore[no-untyped-def]
    """kernel.py and forty 256 KB modules: the hint parsed 32 of them as the reference, 6.8-8.9 s
    and 140 MB a call, in the daemon's runIteration and benchmark too. A module whose text does
    not hold the names a kind's rule asks for (Model, get_inputs; CONFIGS...) is not parsed."""
    from kernelscope.daemon.engine.workspace.discovery import missing_parts, not_a_workspace

    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "kernel.py").write_text("x = 1\n")
    for index in range(40):
        (folder / f"m{index:02}.py").write_text("x = [1, 2, 3]\n" * 2000)
    parsed = _parsed_sizes(monkeypatch)
    said = not_a_workspace(folder, missing_parts(folder), surface)  # type: ignore[arg-type]
    assert NOT_A_WORKSPACE in said and "looks like" not in said, said
    assert parsed == [], parsed


def test_the_hint_parses_at_most_a_megabyte_of_modules(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Modules that name Model and get_inputs without defining them pass the text's check: the
    hint parses no more than a megabyte of them in all."""
    from kernelscope.daemon.engine.workspace.discovery import missing_parts, not_a_workspace

    folder = tmp_path / "named"
    folder.mkdir()
    (folder / "kernel.py").write_text("x = 1\n")
    for index in range(40):
        (folder / f"m{index:02}.py").write_text("# Model get_inputs\n" + "x = [1, 2, 3]\n" * 7000)
    parsed = _parsed_sizes(monkeypatch)
    said = not_a_workspace(folder, missing_parts(folder), "cli")
    assert NOT_A_WORKSPACE in said and "looks like" not in said, said
    assert parsed and sum(parsed) <= 1024 * 1024, (len(parsed), sum(parsed))


def test_a_folder_inside_a_workspace_reads_none_of_its_modules(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A folder inside a workspace is pointed at that workspace; its modules were parsed all the
    same for a hint it never shows."""
    from kernelscope.daemon.engine.workspace.discovery import missing_parts, not_a_workspace

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "kernel.py").write_text("x = 1\n")
    sub = ws / "variants"
    sub.mkdir()
    (sub / "kernel.py").write_text("x = 1\n")
    shutil.copy(FIXTURES / "kernelbench" / "26_GELU_.py", sub / "26_GELU_.py")
    parsed = _parsed_sizes(monkeypatch)
    said = not_a_workspace(sub, missing_parts(sub), "cli")
    assert f"it is inside the workspace {ws}" in said and "looks like" not in said, said
    assert parsed == [], parsed


def test_every_way_out_offers_w_and_names_the_folder_in_its_commands(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Some of the error's ways out carried `-w DIR` and others did not (a workspace with no
    records yet), and only a problem folder's commands named the folder with -w: from elsewhere,
    `kernelscope memory init` "to make this one" initialised the current directory instead. One
    wording (discovery.ELSEWHERE) in every CLI way out, and every command in it runs on the
    folder from where the user is."""
    bare = tmp_path / "bare"
    bare.mkdir()
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    (kernel / "kernel.py").write_text("x = 1\n")
    unrecorded = tmp_path / "unrecorded"
    unrecorded.mkdir()
    (unrecorded / "kernel.py").write_text("x = 1\n")
    (unrecorded / "README.md").write_text(
        '# op\n\n```kernelscope\n{"stop_conditions": ["latency <= 50 us"]}\n```\n'
    )
    for folder in (tmp_path / "missing", bare, kernel, unrecorded, _kernelbench_problem(tmp_path)):
        for command in (("memory", "list"), ("workspace",)):
            refused = cli(*command, "-w", str(folder))
            said = " ".join(refused.stderr.split())
            if refused.exit_code == 0:  # (`workspace` reads a workspace with no records)
                continue
            assert refused.exit_code == 2 and said.count(ELSEWHERE) == 1, (command, said)
            assert said.count("`kernelscope memory init") == said.count(
                f"`kernelscope memory init -w {folder}`"
            ), said
