"""`kernelscope memory ...` end to end: seed-compatible flags, exit codes, corrupt files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_record


def test_seed_compatible_workflow(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    ws = str(tmp_path)
    assert cli("memory", "init", "--workspace", ws).exit_code == 0
    for version in ("v0", "v1", "v2"):
        assert cli("memory", "create", "--workspace", ws, "--version", version).exit_code == 0
    again = cli("memory", "create", "--workspace", ws, "--version", "v1")
    assert again.exit_code == 2 and "already exists" in again.stderr
    result = cli(
        "memory",
        "update",
        "--workspace",
        ws,
        "--version",
        "v1",
        "--set",
        "performance.tflops=150.2",
        "--set",
        "correctness.status=PASS",
        "--set",
        'open_directions=[{"direction": "tma"}]',
        "--set",
        "notes.deep.key=null",
    )
    assert result.exit_code == 0, result.stderr
    data = cli("memory", "read", "--workspace", ws, "--version", "v1").json()
    assert data["performance"]["tflops"] == 150.2
    assert data["correctness"]["status"] == "PASS"
    assert data["open_directions"] == [{"direction": "tma"}]
    assert data["notes"] == {"deep": {"key": None}}
    field = cli("memory", "read", "--workspace", ws, "--version", "v1", "--field", "performance.tflops")
    assert field.json() == 150.2
    # the seed's `--version v1 v2` form: several versions after one flag
    masked = cli("memory", "mask", "--workspace", ws, "--version", "v1", "v2")
    assert masked.exit_code == 0, masked.stderr
    assert cli("memory", "latest", "--workspace", ws).stdout.strip() == "v0"
    hidden = cli("memory", "read", "--workspace", ws, "--version", "v1")
    assert hidden.exit_code == 2 and "masked" in hidden.stderr
    shown = cli("memory", "read", "--workspace", ws, "--version", "v1", "--include-masked")
    assert shown.exit_code == 0
    unmasked_only = cli("memory", "read", "--workspace", ws, "--unmasked-only").json()
    assert [r["version"] for r in unmasked_only] == ["v0"]
    assert cli("memory", "unmask", "--workspace", ws, "--version", "v2").exit_code == 0
    assert cli("memory", "latest", "--workspace", ws, "--json").json() == {"latest": "v2"}
    assert cli("memory", "next-version", "--workspace", ws).stdout.strip() == "v3"


def test_memory_help_says_a_masked_version_is_read_with_include_masked(cli) -> None:  # type: ignore[no-untyped-def]
    """`memory --help` said "Reading a masked version is an error." with no way round, while
    `read --include-masked` reads one (above): the summary names the option."""
    said = " ".join(cli("memory", "--help").stdout.replace("│", " ").split())
    assert "a masked one needs --include-masked" in said, said


def test_exit_codes(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    ws = str(tmp_path)
    write_record(tmp_path, 0)
    assert cli("memory", "read", "-w", ws, "--version", "v9").exit_code == 2
    assert cli("memory", "read", "-w", ws, "--version", "banana").exit_code == 1
    assert cli("memory", "update", "-w", ws, "--version", "v0", "--set", "novalue").exit_code == 1
    assert cli("memory", "update", "-w", ws, "--version", "v0", "--set", "x=NaN").exit_code == 1
    assert cli("memory", "frobnicate").exit_code == 1
    assert cli("memory", "mask", "-w", ws, "--no-such-flag").exit_code == 1
    refused = cli("memory", "mask", "-w", ws, "--version", "v0")
    assert refused.exit_code == 2 and "baseline" in refused.stderr  # a refused operation
    assert json.loads((tmp_path / "memory" / "v0.json").read_text()).get("masked") is None


def test_update_refuses_to_clobber_a_non_object(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = write_record(tmp_path, 1, performance="not measured")
    before = path.read_bytes()
    result = cli("memory", "update", "-w", str(tmp_path), "--version", "v1", "--set", "performance.tflops=3")
    assert result.exit_code == 2 and "not an object" in result.stderr
    assert path.read_bytes() == before


def test_update_is_all_or_nothing(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = write_record(tmp_path, 1, performance="n/a")
    before = path.read_bytes()
    result = cli(
        "memory",
        "update",
        "-w",
        str(tmp_path),
        "--version",
        "v1",
        "--set",
        "score=1.5",
        "--set",
        "performance.tflops=3",
    )
    assert result.exit_code == 2
    assert path.read_bytes() == before


def test_versions_sort_numerically_and_next_counts_masked_and_corrupt(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    for number in (0, 1, 2, 9, 10):
        write_record(tmp_path, number, quality_gate={"result": "PASS"})
    (tmp_path / "memory" / "v11.json").write_text('{"version": "v11", "masked": true')  # torn
    (tmp_path / "memory" / "notes.json").write_text("{}")
    listing = cli("memory", "list", "-w", str(tmp_path), "--json")
    assert listing.exit_code == 0
    rows = listing.json()
    assert [r["version"] for r in rows] == ["v0", "v1", "v2", "v9", "v10", "v11"]
    assert rows[-1]["error"] and "v11.json" in rows[-1]["error"]
    assert cli("memory", "next-version", "-w", str(tmp_path)).stdout.strip() == "v12"
    read_all = cli("memory", "read", "-w", str(tmp_path))
    assert read_all.exit_code == 0 and "v11.json" in read_all.stderr
    assert [r["version"] for r in read_all.json()] == ["v0", "v1", "v2", "v9", "v10"]
    table = cli("memory", "list", "-w", str(tmp_path))
    assert table.exit_code == 0 and "CORRUPT" in table.stdout


def test_corrupt_file_makes_mask_half_refuse_unless_forced(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    for number in range(6):
        write_record(
            tmp_path, number, quality_gate={"result": "PASS"}, performance={"latency_us": 10 - number}
        )
    corrupt = tmp_path / "memory" / "v7.json"
    corrupt.write_text("{not json")
    refused = cli("memory", "mask-half", "-w", str(tmp_path), "--seed", "1")
    assert refused.exit_code == 2 and "v7.json" in refused.stderr
    assert not any(json.loads(p.read_text()).get("masked") for p in (tmp_path / "memory").glob("v[0-6].json"))
    forced = cli("memory", "mask-half", "-w", str(tmp_path), "--seed", "1", "--force", "--json")
    assert forced.exit_code == 0, forced.stderr
    result = forced.json()
    assert result["skipped_corrupt"] == ["v7"] and result["next_version"] == "v8"
    assert corrupt.read_text() == "{not json"


def test_mask_changes_only_the_masked_key(vector_add_ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = vector_add_ws / "memory" / "v2.json"
    original = path.read_text()
    assert cli("memory", "mask", "-w", str(vector_add_ws), "--version", "v2").exit_code == 0
    changed = path.read_text()
    assert changed == original.replace('"masked": false', '"masked": true')
    assert cli("memory", "unmask", "-w", str(vector_add_ws), "--version", "v2").exit_code == 0
    assert path.read_text() == original


def test_mask_half_on_example(vector_add_ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    before = {p.name: json.loads(p.read_text()) for p in (vector_add_ws / "memory").glob("*.json")}
    files = sorted(vector_add_ws.rglob("*"))
    dry = cli("memory", "mask-half", "-w", str(vector_add_ws), "--seed", "7", "--dry-run", "--json").json()
    assert {p.name: json.loads(p.read_text()) for p in (vector_add_ws / "memory").glob("*.json")} == before
    assert (
        sorted(vector_add_ws.rglob("*")) == files
    )  # not even a lock file (before: memory/.kernelscope.lock)
    # README's first stop condition is bandwidth: v4 (4043 GB/s, gate PASS) is the best
    assert dry["best_version"] == "v4" and dry["best_metric"] == "bandwidth"
    assert dry["candidates"] == ["v1", "v2", "v3"] and len(dry["masked"]) == 1
    real = cli("memory", "mask-half", "-w", str(vector_add_ws), "--seed", "7", "--json").json()
    assert real["masked"] == dry["masked"] and real["seed"] == 7
    assert real["next_version"] == "v5"
    latest = json.loads((vector_add_ws / "memory" / "v4.json").read_text())
    entry = latest["pitfalls_and_fixes"][-1]
    assert entry["masked_versions"] == real["masked"] and entry["seed"] == 7
    human = cli("memory", "summary", "-w", str(vector_add_ws))
    assert human.exit_code == 0 and "1 masked" in human.stdout


def test_console_script_runs_as_a_real_process(vector_add_ws: Path) -> None:
    exe = Path(sys.executable).with_name("kernelscope")
    proc = subprocess.run(
        [str(exe), "memory", "list", "--workspace", str(vector_add_ws), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert [row["version"] for row in json.loads(proc.stdout)] == ["v0", "v1", "v2", "v3", "v4"]
    bad = subprocess.run(
        [str(exe), "memory", "read", "-w", str(vector_add_ws), "--version", "v99"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "v99 not found" in bad.stderr


def test_a_version_file_named_with_leading_zeros_is_that_version(vector_add_ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`v010.json` (as some tool may name it; the listing and the seed's script take it as v10):
    read, update and mask-half find it; before, `memory list` showed v10 and every command
    that named v10 looked for v10.json and failed (mask-half too: its note goes to v10)."""
    memory = vector_add_ws / "memory"
    record = json.loads((memory / "v4.json").read_text())
    (memory / "v010.json").write_text(json.dumps({**record, "version": "v10"}, indent=2))
    listed = cli("memory", "list", "-w", str(vector_add_ws), "--json").json()
    assert listed[-1]["version"] == "v10"
    for name in ("v10", "v010", "10"):
        read = cli("memory", "read", "-w", str(vector_add_ws), "--version", name, "--field", "version")
        assert read.exit_code == 0 and read.json() == "v10", (name, read.stderr)
    updated = cli("memory", "update", "-w", str(vector_add_ws), "-v", "v10", "--set", "notes.seen=true")
    assert updated.exit_code == 0 and "v010.json" in updated.stdout, (updated.stdout, updated.stderr)
    assert json.loads((memory / "v010.json").read_text())["notes"]["seen"] is True
    assert not (memory / "v10.json").exists()
    from kernelscope.daemon.engine.history.timeline import build_history

    assert "v10" in build_history(vector_add_ws).versions  # hover and the save check know it too
    masked = cli("memory", "mask-half", "-w", str(vector_add_ws), "--seed", "7", "--json")
    assert masked.exit_code == 0, masked.stderr
    assert masked.json()["next_version"] == "v11"
    # beside a v10.json, v010.json is not v10's file: one row, the plain name's
    (memory / "v10.json").write_text(json.dumps({**record, "version": "v10"}, indent=2))
    rows = cli("memory", "list", "-w", str(vector_add_ws), "--json").json()
    assert [row["path"] for row in rows if row["version"] == "v10"] == [str(memory / "v10.json")]


def test_create_and_update_refuse_a_supervised_workspace_on_both_paths(
    tmp_path: Path,
    cli,  # type: ignore[no-untyped-def]
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """`memory create` / `memory update` write as `mask` does, so they refuse what it refuses:
    an orchestrator's workspace (unless --force), its running episode's version (always), and
    masked=true on v0 without --include-baseline; the fast path and typer alike."""
    ws = tmp_path
    for version in range(5):
        write_record(ws, version, masked=False)
    (ws / ".orchestrator_state.json").write_text('{"stall": 0}\n')
    (ws / "memory" / "live.json").write_text('{"version": "v5", "episode": 5, "phase": "exploring"}\n')
    before = {p.name: p.read_bytes() for p in (ws / "memory").iterdir()}
    for fast_path in (True, False):
        if fast_path:
            monkeypatch.delenv("KERNELSCOPE_NO_FAST_PATH", raising=False)
        else:
            monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
        for args in (
            ("create", "--version", "v5"),
            ("create", "--version", "v5", "--force"),
            ("create", "--version", "v7"),
            ("update", "--version", "v4", "--set", 'quality_gate.result="FAIL"'),
            ("update", "--version", "v3", "--set", "masked=true"),
        ):
            refused = cli("memory", *args, "-w", str(ws))
            assert refused.exit_code == 2 and "refusing" in refused.stderr, (fast_path, args, refused)
        baseline = cli(
            "memory", "update", "--version", "v0", "--set", "masked=true", "-w", str(ws), "--force"
        )
        # a refused operation (docs/memory.md's exit statuses), as the orchestrator's refusal
        assert baseline.exit_code == 2 and "refusing to mask v0" in baseline.stderr, baseline
        assert {p.name: p.read_bytes() for p in (ws / "memory").iterdir()} == before
    forced = cli("memory", "update", "--version", "v4", "--set", "notes=1", "-w", str(ws), "--force")
    assert forced.exit_code == 0, forced.stderr
    (ws / ".orchestrator_state.json").unlink()
    (ws / "memory" / "live.json").unlink()
    monkeypatch.delenv("KERNELSCOPE_NO_FAST_PATH", raising=False)
    fast_refusal = cli("memory", "update", "--version", "v0", "--set", "masked=true", "-w", str(ws))
    assert fast_refusal.exit_code == 2 and "refusing to mask v0" in fast_refusal.stderr
    for masking in (("mask", "--version", "v0"), ("mask", "--version", "v0", "--json")):
        refused = cli("memory", *masking, "-w", str(ws))
        assert refused.exit_code == 2 and "refusing to mask v0" in refused.stderr + refused.stdout, refused
    allowed = cli(
        "memory", "update", "--version", "v0", "--set", "masked=true", "-w", str(ws), "--include-baseline"
    )
    assert allowed.exit_code == 0, allowed.stderr


GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def _repository_of_records(repo: Path, workspaces: list[Path]) -> None:
    """`repo` a git repository holding v0..v2 of each workspace, committed."""
    for ws in workspaces:
        for version in range(3):
            write_record(ws, version, masked=False)
    subprocess.run([*GIT, "init", "-q", str(repo)], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qm", "memory"], check=True)


def _untracked_after_writes(cli, monkeypatch, workspaces: list[Path], repo: Path) -> list[str]:  # type: ignore[no-untyped-def]
    """What `git status` lists in `repo` after an update, a mask and an unmask in each
    workspace, through both CLI paths (the fast one and typer's)."""
    for fast_path in (True, False):
        if fast_path:
            monkeypatch.delenv("KERNELSCOPE_NO_FAST_PATH", raising=False)
        else:
            monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
        for ws in workspaces:
            done = cli(
                "memory", "update", "--version", "v1", "--set", f"notes={int(fast_path)}", "-w", str(ws)
            )
            assert done.exit_code == 0, done.stderr
            masked = cli("memory", "mask", "--version", "v2", "-w", str(ws))
            assert masked.exit_code == 0, masked.stderr
            cli("memory", "unmask", "--version", "v2", "-w", str(ws))
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(line[3:] for line in status.stdout.splitlines())


def test_writes_in_a_git_worktree_leave_no_untracked_lock_file(
    tmp_path: Path,
    cli,  # type: ignore[no-untyped-def]
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """atrex runs each episode in a git worktree, whose `.git` is a file naming its git
    directory: the lock goes there, as for a repository's root, not into memory/ where it
    showed in `git status` (and an agent's `git add -A` committed it). Both CLI paths."""
    repo, episode = tmp_path / "repo", tmp_path / "episode"
    _repository_of_records(repo, [repo])
    subprocess.run([*GIT, "-C", str(repo), "worktree", "add", "-q", str(episode)], check=True)
    assert (episode / ".git").is_file()
    assert _untracked_after_writes(cli, monkeypatch, [episode], episode) == ["memory/v1.json"]
    assert list((repo / ".git" / "worktrees").glob("*/kernelscope/*.lock")), (
        "the lock is in the worktree's git dir"
    )


def test_a_folder_inside_a_workspace_names_the_workspace(
    tmp_path: Path,
    cli,  # type: ignore[no-untyped-def]
) -> None:
    """Run from a folder inside a workspace (memory/, say: where an agent often is), a command
    that needs the workspace says which one to pass, as `check` finds it on its own."""
    ws = tmp_path / "kernel_opt_x"
    write_record(ws, 0, masked=False)
    (ws / "kernel.py").write_text("import torch\n")
    for args in (("memory", "list"), ("bench", "--json")):
        inside = cli(*args, "-w", str(ws / "memory"))
        assert inside.exit_code == 2, inside
        assert (
            f"it is inside the workspace {ws.resolve()}: pass -w {ws.resolve()}"
            in inside.stderr + inside.stdout
        )
    outside = cli("memory", "list", "-w", str(tmp_path))
    assert outside.exit_code == 2 and "inside the workspace" not in outside.stderr, outside


def test_writes_in_a_workspace_below_the_repositorys_top_leave_no_untracked_lock_file(
    tmp_path: Path,
    cli,  # type: ignore[no-untyped-def]
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """A workspace in a subfolder of a repository (repo/kernels/softmax, a monorepo of kernels)
    got its locks as memory/.kernelscope.lock and memory/.kernelscope-iteration.lock: untracked
    files in `git status`, committed by an agent's `git add -A`. They go into the enclosing
    repository's git dir, one folder per workspace, as for a workspace at the top. Both CLI
    paths."""
    repo = tmp_path / "repo"
    workspaces = [repo / "kernels" / "softmax", repo / "kernels" / "gemm"]
    _repository_of_records(repo, workspaces)
    assert _untracked_after_writes(cli, monkeypatch, workspaces, repo) == [
        "kernels/gemm/memory/v1.json",
        "kernels/softmax/memory/v1.json",
    ]
    for name in ("softmax", "gemm"):  # each workspace its own locks
        assert (
            repo / ".git" / "kernelscope" / "workspaces" / "kernels" / name / ".kernelscope.lock"
        ).is_file()


@pytest.mark.parametrize("fast_path", [True, False])
def test_a_corrupt_records_masked_state_is_unknown_not_false(
    vector_add_ws: Path, cli, monkeypatch: pytest.MonkeyPatch, fast_path: bool
) -> None:  # type: ignore[no-untyped-def]
    """The table shows `?` for a record that cannot be read; the JSON must say null (unknown),
    never `false` (the file may well say `"masked": true`)."""
    if not fast_path:
        monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
    (vector_add_ws / "memory" / "v7.json").write_text('{"version": "v7", "masked": true, broken')
    ws = str(vector_add_ws)
    for command in ("list", "summary"):
        result = cli("memory", command, "-w", ws, "--json")
        assert result.exit_code == 0, result.stderr
        document = result.json()
        rows = document if command == "list" else document["versions"]
        corrupt = next(row for row in rows if row["version"] == "v7")
        assert corrupt["error"] and corrupt["masked"] is None, (command, corrupt)
        assert all(isinstance(row["masked"], bool) for row in rows if row["version"] != "v7")


@pytest.mark.parametrize("fast_path", [True, False])
def test_error_documents_use_one_vocabulary_of_kinds(
    vector_add_ws: Path, cli, monkeypatch: pytest.MonkeyPatch, fast_path: bool
) -> None:  # type: ignore[no-untyped-def]
    """A usage error is kind `usage` whoever finds it (click's parser or the engine's check of
    a --set), missing data is `data`, each with the exit status it names."""
    if not fast_path:
        monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
    ws = str(vector_add_ws)
    cases = [
        (("memory", "list", "--bogus", "-w", ws), "usage", 1),
        (("memory", "update", "-w", ws, "--version", "v0", "--set", "x"), "usage", 1),
        (("memory", "read", "-w", ws, "--version", "banana"), "usage", 1),
        (("memory", "read", "-w", ws, "--version", "v9"), "data", 2),
        (("memory", "list", "-w", str(vector_add_ws / "memory")), "data", 2),
    ]
    for args, kind, status in cases:
        result = cli(*args, "--json")
        assert result.exit_code == status, (args, result.stdout, result.stderr)
        assert result.json()["error"] == {
            "kind": kind,
            "message": result.json()["error"]["message"],
            "exit_code": status,
        }, args


# Records Python's json parses only to fail (RecursionError) or cannot convert (ValueError: an
# integer over 4300 digits): a traceback from every command, nothing on stdout under --json.
HOSTILE_RECORDS = {
    "deep": "[" * 100_000 + "]" * 100_000,
    "huge-int": '{"version": "v5", "masked": false, "performance": {"latency_us": ' + "9" * 5000 + "}}",
    "just-too-deep": '{"version": "v5", "a": ' + "[" * 100 + "]" * 100 + "}",
}


@pytest.mark.parametrize("fast_path", [True, False])
@pytest.mark.parametrize("hostile", sorted(HOSTILE_RECORDS))
def test_a_record_json_cannot_hold_is_a_corrupt_file(
    vector_add_ws: Path, cli, monkeypatch: pytest.MonkeyPatch, fast_path: bool, hostile: str
) -> None:  # type: ignore[no-untyped-def]
    """docs/memory.md: a corrupt file is reported by name and skipped, exit 2 when it is the one
    asked for, one JSON document under --json; the other files are untouched."""
    if not fast_path:
        monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
    (vector_add_ws / "memory" / "v5.json").write_text(HOSTILE_RECORDS[hostile])

    def records() -> dict[str, bytes]:  # (the update below writes v4 and, outside git, a lock)
        return {
            p.name: p.read_bytes() for p in (vector_add_ws / "memory").glob("v*.json") if p.name != "v4.json"
        }

    before = records()
    ws = str(vector_add_ws)
    listing = cli("memory", "list", "-w", ws, "--json")
    assert listing.exit_code == 0, listing.stderr
    row = next(row for row in listing.json() if row["version"] == "v5")
    assert "v5.json" in row["error"] and row["masked"] is None
    summary = cli("memory", "summary", "-w", ws, "--json")
    assert summary.exit_code == 0 and "v5" in [r["version"] for r in summary.json()["versions"]]
    everything = cli("memory", "read", "-w", ws)
    assert everything.exit_code == 0 and "v5.json" in everything.stderr
    assert "v5" not in [record["version"] for record in everything.json()]
    one = cli("memory", "read", "-w", ws, "--version", "v5", "--json")
    assert one.exit_code == 2 and "v5.json" in one.json()["error"]["message"]
    for args in (("latest",), ("next-version",), ("update", "-v", "v4", "-s", "a=1"), ("mask", "-v", "v5")):
        result = cli("memory", *args, "-w", ws, "--json")
        assert result.exit_code in (0, 2) and "Traceback" not in result.stderr, (args, result.stderr)
        assert isinstance(result.json(), (dict, list, str)), args
    for args in (("workspace",), ("exp", "top")):
        result = cli(*args, "-w", ws, "--json")
        assert result.exit_code == 0, (args, result.stderr)
        result.json()
    assert (vector_add_ws / "memory" / "v5.json").read_text() == HOSTILE_RECORDS[hostile]
    assert records() == before


@pytest.mark.parametrize("fast_path", [True, False])
def test_update_refuses_what_no_reader_could_read_back(
    vector_add_ws: Path, cli, monkeypatch: pytest.MonkeyPatch, fast_path: bool
) -> None:  # type: ignore[no-untyped-def]
    """`--set` with a 900-level key wrote a record `memory read` then failed on (RecursionError);
    with 2000 levels the write itself was a traceback (json's encoder). Refused up front, exit
    1, nothing written; as deep as the readers read (100 levels) is written and read back."""
    if not fast_path:
        monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
    ws, path = str(vector_add_ws), vector_add_ws / "memory" / "v4.json"
    before = path.read_bytes()
    for assignment in (
        "deep." + ".".join(["k"] * 900) + "=1",
        "deep." + ".".join(["k"] * 2000) + "=1",
        ".".join(["k"] * 100) + "=[1]",
        "a=" + "[" * 150 + "]" * 150,
        "a=" + "[" * 100_000 + "]" * 100_000,
        "a=" + "9" * 5000,
    ):
        refused = cli("memory", "update", "-w", ws, "-v", "v4", "--set", assignment, "--json")
        assert refused.exit_code == 1 and refused.json()["error"]["kind"] == "usage", refused.stdout[:300]
        assert "100" in refused.json()["error"]["message"] or "4300" in refused.json()["error"]["message"]
        assert path.read_bytes() == before
    deepest = ".".join(["k"] * 100)
    assert cli("memory", "update", "-w", ws, "-v", "v4", "--set", f"{deepest}=1").exit_code == 0
    read = cli("memory", "read", "-w", ws, "-v", "v4", "--field", deepest, "--json")
    assert read.exit_code == 0 and read.json() == 1, read.stderr
    assert cli("memory", "read", "-w", ws, "-v", "v4").exit_code == 0
    assert cli("memory", "list", "-w", ws, "--json").exit_code == 0


@pytest.mark.parametrize("fast_path", [True, False])
def test_a_score_that_overflows_is_no_score(
    vector_add_ws: Path, cli, monkeypatch: pytest.MonkeyPatch, fast_path: bool
) -> None:  # type: ignore[no-untyped-def]
    """v4 records a tiny positive latency (1e-320): v0's latency over it overflowed to inf, and
    `--json` printed `Infinity`, which is not JSON. A non-finite ratio is no score."""
    if not fast_path:
        monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
    path = vector_add_ws / "memory" / "v4.json"
    path.write_text(path.read_text().replace('"latency_us": 49.8', '"latency_us": 1e-320'))

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in --json output")

    for args in (
        ("memory", "list"),
        ("memory", "summary"),
        ("workspace",),
        ("memory", "mask-half", "--dry-run"),
    ):
        result = cli(*args, "-w", str(vector_add_ws), "--json")
        assert result.exit_code == 0, (args, result.stderr)
        json.loads(result.stdout, parse_constant=refuse)
    row = next(
        row
        for row in cli("memory", "list", "-w", str(vector_add_ws), "--json").json()
        if row["version"] == "v4"
    )
    assert row["score"] is None and row["latency_ratio"] is None
    assert "inf" not in cli("memory", "list", "-w", str(vector_add_ws)).stdout


def test_summary_names_targets_as_the_lens_does(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """atrex's `Target utilization stop condition: `90%`` printed `Targets: `90%``: the condition
    is named as the lens names it (lens_text.condition_label)."""
    readme = "# K\n\n## Campaign\n- Target utilization stop condition: `90%`\n\n## Stop Conditions\n- latency <= 12 us\n"
    (tmp_path / "README.md").write_text(readme)
    write_record(tmp_path, 0)
    result = cli("memory", "summary", "-w", str(tmp_path))
    assert "Targets: utilization >= 90%, latency <= 12 us" in result.stdout, result.stdout
