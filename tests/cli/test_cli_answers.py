"""Answers of the CLI a demanding user checks: what the fast path and the full CLI say about the
same workspace, and that each says what is true."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelscope.daemon.engine.memory import core
from tests.conftest import CliResult
from tests.support.fast_path import spy_on_fast_path

Both = Callable[..., tuple[CliResult, CliResult]]


@pytest.fixture
def both(cli, monkeypatch: pytest.MonkeyPatch) -> Both:  # type: ignore[no-untyped-def]
    """`both(*args)`: `kernelscope ARGS` by the fast path (which must run it), then by typer."""
    handled = spy_on_fast_path(monkeypatch)

    def run(*args: str) -> tuple[CliResult, CliResult]:
        monkeypatch.delenv("KERNELSCOPE_NO_FAST_PATH", raising=False)
        handled.clear()
        quick = cli(*args)
        assert handled == [True], ("the fast path handed it over", args)
        monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
        return quick, cli(*args)

    return run


def test_fast_list_scores_each_version_once(
    vector_add_ws: Path, both: Both, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast `memory list` asked score_parts twice per version (whether the README's metric
    decides the score, then the row's score) and four times for one it cannot score (a note's
    finding: 12 calls for the example's 5 versions). Once each now, the same answer as typer's."""
    calls: list[str] = []
    original = core.score_parts

    def counted(record, baseline, kind=None, v0=None):  # type: ignore[no-untyped-def]
        if not os.environ.get("KERNELSCOPE_NO_FAST_PATH"):  # the fast run's calls
            calls.append(record.get("version"))
        return original(record, baseline, kind, v0)

    monkeypatch.setattr(core, "score_parts", counted)
    for args in (("--json",), ()):
        calls.clear()
        quick, slow = both("memory", "list", "-w", str(vector_add_ws), *args)
        assert sorted(calls) == ["v0", "v1", "v2", "v3", "v4"], calls
        assert (quick.exit_code, quick.stdout) == (slow.exit_code, slow.stdout) and quick.exit_code == 0


def test_a_fresh_workspace_has_no_versions_in_every_form(
    vector_add_ws: Path, cli, both: Both, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """A workspace whose memory/ holds no record yet (an atrex workspace starts so): `memory
    list --json` said `[]` (exit 0), its table 'no memory files' (exit 2), and `memory summary`
    the same two answers. No versions is an answer: exit 0 in both forms, the table saying so."""
    for path in (vector_add_ws / "memory").glob("*"):
        path.unlink()
    ws = str(vector_add_ws)
    memory_dir = vector_add_ws / "memory"
    listed, typer_listed = both("memory", "list", "-w", ws, "--json")
    assert (listed.exit_code, json.loads(listed.stdout)) == (0, []) and listed.stdout == typer_listed.stdout
    table, typer_table = both("memory", "list", "-w", ws)
    assert table.exit_code == typer_table.exit_code == 0, (table.stderr, typer_table.stderr)
    assert table.stdout == typer_table.stdout == f"{core.no_versions(memory_dir)}\n"
    for full in (False, True):
        if full:
            monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
        else:
            monkeypatch.delenv("KERNELSCOPE_NO_FAST_PATH", raising=False)
        summary = cli("memory", "summary", "-w", ws, "--json")
        assert summary.exit_code == 0 and summary.json()["versions"] == []
        shown = cli("memory", "summary", "-w", ws)
        assert shown.exit_code == 0 and core.no_versions(memory_dir) in shown.stdout, shown.stderr
        # which version is the latest is a question without an answer: an error in both forms
        latest = cli("memory", "latest", "-w", ws, "--json")
        assert latest.exit_code == 2 and latest.json()["error"]["message"] == "no unmasked iterations found"
        assert cli("memory", "latest", "-w", ws).exit_code == 2


@pytest.mark.parametrize("masked", [1, 5])
def test_reading_a_memory_whose_every_version_is_masked_says_so(
    vector_add_ws: Path, both: Both, masked: int
) -> None:  # type: ignore[no-untyped-def]
    """`memory read` (every version) when all are masked said "no memory files in DIR" (exit
    2), on the fast path and the full one, while the files are there: it says they are all
    masked and that --include-masked reads them, the same words on both paths (one function,
    core.nothing_to_read), exit 2 as documented; --include-masked reads them."""
    memory_dir = vector_add_ws / "memory"
    files = sorted(memory_dir.glob("v*.json"))
    for path in files[masked:]:
        path.unlink()
    for path in files[:masked]:
        path.write_text(path.read_text().replace('"masked": false', '"masked": true', 1))
    ws = str(vector_add_ws)
    expected = core.nothing_to_read(memory_dir, masked)
    assert "no memory files" not in expected and "--include-masked" in expected
    assert ("all 5 versions" if masked == 5 else "the one version") in expected
    quick, slow = both("memory", "read", "-w", ws, "--json")
    for result in (quick, slow):
        assert result.exit_code == 2, result
        assert json.loads(result.stdout)["error"]["message"] == expected, result
    quick, slow = both("memory", "read", "-w", ws)
    assert quick.exit_code == slow.exit_code == 2 and expected in quick.stderr and expected in slow.stderr
    shown, typer_shown = both("memory", "read", "-w", ws, "--include-masked", "--json")
    assert len(json.loads(shown.stdout)) == masked and shown.stdout == typer_shown.stdout


def test_summary_counts_a_corrupt_record_as_unknown_not_unmasked(vector_add_ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A torn record that said masked (`memory list --json` shows masked null: unknown) was
    counted as not masked: '0 masked'. The summary counts what is known, table and JSON alike."""
    (vector_add_ws / "memory" / "v2.json").write_text('{"version": "v2", "masked": true')  # torn
    ws = str(vector_add_ws)
    listed = {row["version"]: row["masked"] for row in cli("memory", "list", "-w", ws, "--json").json()}
    assert listed["v2"] is None and sum(1 for m in listed.values() if m) == 0
    summary = cli("memory", "summary", "-w", ws, "--json").json()
    assert (summary["masked_count"], summary["unreadable_count"]) == (0, 1)
    assert "next version v5, 0 masked, 1 unreadable" in " ".join(
        cli("memory", "summary", "-w", ws).stdout.split()
    )
    assert "Memory: 5 versions, 0 masked, 1 unreadable, next v5" in cli("workspace", "-w", ws).stdout


INTERRUPTED = {"error": {"kind": "interrupted", "message": "interrupted", "exit_code": 130}}


@pytest.mark.parametrize("command", ["list", "read", "latest"])
def test_an_interrupt_under_json_is_one_error_document_on_both_paths(
    vector_add_ws: Path, both: Both, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Ctrl-C while the records are read (the hook: reading the memory/ listing raises
    KeyboardInterrupt, as SIGINT there would): under --json the fast path printed nothing (exit
    130), and so did the full CLI (typer turns the interrupt into Exit(130), which main passed
    on silently). An agent parsed empty output; now both print the interrupted document."""

    def interrupted(memory_dir: Path) -> list[tuple[int, Path]]:
        raise KeyboardInterrupt

    monkeypatch.setattr(core, "record_files", interrupted)
    quick, slow = both("memory", command, "-w", str(vector_add_ws), "--json")
    for result in (quick, slow):
        assert result.exit_code == 130, result
        assert json.loads(result.stdout) == INTERRUPTED, result
    quick, slow = both("memory", command, "-w", str(vector_add_ws))  # a person: exit 130 both ways
    assert (quick.exit_code, quick.stdout) == (slow.exit_code, slow.stdout) == (130, "")


@pytest.mark.parametrize("folder", ["typo", "not a workspace"])
def test_exp_record_refuses_a_folder_that_is_not_a_workspace(
    vector_add_ws: Path, tmp_path: Path, cli, folder: str
) -> None:  # type: ignore[no-untyped-def]
    """`exp record -w` stored any path, unchecked: a typo filed the experiment under a folder
    no lens or read of the workspace shows, exit 0. It is the one not-a-workspace error (exit 2,
    a JSON error document), nothing written, the store not even created; a workspace is
    recorded as before, and a record of a workspace not on this machine is `exp import`'s."""
    target = tmp_path / "kernel_opt_vector_ad"  # the typo
    if folder == "not a workspace":
        target = tmp_path / "notes"
        target.mkdir()
    db = tmp_path / "exp.sqlite"
    args = ("exp", "record", "-m", "tiling", "--score", "1.2", "--db", str(db))
    refused = cli(*args, "-w", str(target), "--json")
    assert refused.exit_code == 2, refused
    error = refused.json()["error"]
    assert error["kind"] == "data" and "is not an optimization workspace" in error["message"], error
    assert "exp import" in error["message"] and not db.exists()
    recorded = cli(*args, "-w", str(vector_add_ws), "--json")
    assert recorded.exit_code == 0 and recorded.json()["workspace"] == str(vector_add_ws)
    assert cli(*args, "-w", str(target)).exit_code == 2
    shown = cli("exp", "list", "--db", str(db), "--json").json()
    assert [row["workspace"] for row in shown] == [str(vector_add_ws)]


@pytest.mark.parametrize("folder", ["typo", "not a workspace"])
def test_exp_update_refuses_a_folder_that_is_not_a_workspace(
    vector_add_ws: Path, tmp_path: Path, cli, folder: str
) -> None:  # type: ignore[no-untyped-def]
    """`exp update ID --set workspace=PATH` stored PATH unchecked (made absolute), while
    `exp record -w` refuses it: the same rule for both, the one not-a-workspace error (exit 2),
    nothing changed; a workspace is stored as record stores it (resolved), an empty value
    clears it."""
    target = tmp_path / "kernel_opt_vector_ad"  # the typo
    if folder == "not a workspace":
        target = tmp_path / "notes"
        target.mkdir()
    db = tmp_path / "exp.sqlite"
    recorded = cli("exp", "record", "-m", "tiling", "-w", str(vector_add_ws), "--db", str(db), "--json")
    exp_id = recorded.json()["id"]
    update = ("exp", "update", exp_id, "--db", str(db))
    refused = cli(*update, "--set", f"workspace={target}", "--json")
    assert refused.exit_code == 2, refused
    error = refused.json()["error"]
    assert error["kind"] == "data" and "is not an optimization workspace" in error["message"], error
    assert f"nothing changed in {exp_id}" in error["message"], error
    shown = cli("exp", "show", exp_id, "--db", str(db), "--json").json()
    assert shown["workspace"] == str(vector_add_ws)
    linked = tmp_path / "linked"
    linked.symlink_to(vector_add_ws)
    moved = cli(*update, "--set", f"workspace={linked}", "--json")
    assert moved.exit_code == 0 and moved.json()["workspace"] == str(vector_add_ws.resolve()), moved
    cleared = cli(*update, "--set", "workspace=", "--json")
    assert cleared.exit_code == 0 and cleared.json()["workspace"] == "", cleared


def test_an_interrupted_bench_under_json_is_one_document(
    vector_add_ws: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Ctrl-C while bench measures (the hook: the run raises KeyboardInterrupt, as SIGINT there
    would): `bench --json` printed nothing (exit 130) while every other command printed its
    interrupted document; it prints bench's own document, kind `interrupted`, no verdict."""
    from kernelscope.daemon.cli import bench as bench_cli

    def interrupted(request: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_cli, "run_benchmark", interrupted)
    result = cli("bench", "-w", str(vector_add_ws), "--mode", "interpreter", "--json")
    assert result.exit_code == 130, result
    document = json.loads(result.stdout)
    assert document["status"] == "error" and document["passed"] is False
    assert document["error"]["kind"] == "interrupted", document
    person = cli("bench", "-w", str(vector_add_ws), "--mode", "interpreter")
    assert (person.exit_code, person.stdout) == (130, "")


def test_the_cli_prints_no_json_that_holds_nan_or_infinity(capsys: pytest.CaptureFixture[str]) -> None:
    """`--json` printed `Infinity` where a number overflowed: no JSON parser reads it. The one
    JSON writer prints null there (JSON's "no number"), the rest of the document intact; a
    record, which kernelscope writes to read again, refuses them (NotJSON)."""
    from kernelscope.daemon.cli import output
    from kernelscope.daemon.engine import NotJSON
    from kernelscope.daemon.engine.memory.atomic_io import dump_json

    for value in (float("inf"), float("nan"), -float("inf")):
        output.print_json({"score": {"value": value}, "runs": [value, 2.0], "name": "v1"})
        assert json.loads(capsys.readouterr().out) == {
            "score": {"value": None},
            "runs": [None, 2.0],
            "name": "v1",
        }
        with pytest.raises(NotJSON, match="NaN or Infinity"):
            dump_json({"score": value})
    output.print_json({"score": 1.5})
    assert json.loads(capsys.readouterr().out) == {"score": 1.5}
