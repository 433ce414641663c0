"""What the CLI tells a new user, checked for being true: the demo's store sentence and the
commands it suggests, mask-half's uncommitted files, demo --json, the help text (no `<bool>`
on flags, one true text per option, -h, --version), the not-a-workspace way out, and one
behaviour for an empty experiment listing."""

from __future__ import annotations

import json
import shlex
import subprocess
from importlib.metadata import version as installed_version
from pathlib import Path

import pytest

from kernelscope.daemon.engine.workflows.demo import DemoResult
from kernelscope.protocol.commands import IterationResult, MaskHalfResult

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def _git(ws: Path, *args: str) -> str:
    done = subprocess.run(["git", *IDENTITY, *args], cwd=ws, check=True, capture_output=True, text=True)
    return done.stdout


def _fake_demo(workspace: Path, db_url: str) -> DemoResult:
    """What run_demo returns, without 30 s of interpreter runs: the CLI's words are under test."""
    mask = MaskHalfResult(
        workspace=str(workspace),
        seed=0,
        candidates=["v1", "v2"],
        masked=["v2"],
        best_version="v3",
        best_metric=None,
        best_rule="highest score",
        next_version="v4",
    )
    return DemoResult(
        workspace=workspace,
        db_url=db_url,
        mask=mask,
        file_lens="next v4 | 1 masked",
        kernel_lenses={"add_kernel": "best 9.03x v3"},
        table_columns=["version", "score"],
        table_rows=[["v0", "1.00x"], ["v3", "9.03x"]],
    )


@pytest.fixture
def fake_demo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    from kernelscope.daemon.cli import demo

    def run(directory, db, **_kwargs):  # type: ignore[no-untyped-def]
        from kernelscope.daemon.engine.store.config import resolve_db_url

        ws = tmp_path / "demo" / "kernel_opt_vector_add"
        ws.mkdir(parents=True, exist_ok=True)
        result = _fake_demo(ws, resolve_db_url(db))
        memory = str(ws / "memory" / "v1.json")
        result.iterations = [
            IterationResult(
                workspace=str(ws),
                version="v1",
                passed=True,
                mode="interpreter",
                memory_path=memory,
                exit_status=0,
            )
        ]
        return result

    monkeypatch.setattr(demo, "run_demo", run)
    return run


def _suggested(stdout: str) -> list[list[str]]:
    lines = stdout.split("Explore it:\n", 1)[1].splitlines()
    return [shlex.split(line) for line in lines if line.startswith("  kernelscope ")]


def test_the_demo_with_its_own_store_says_how_commands_read_it(fake_demo, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`demo --db X` said "(your store: every command reads it)", yet its own suggested `exp
    summary -w DIR` read the default store (an empty table). Now the sentence says how to point
    commands at X, and each suggested command that reads the store carries `--db X`."""
    store = tmp_path / "x.db"
    done = cli("demo", "--db", str(store))
    assert done.exit_code == 0, done.stderr
    assert "every command reads it" not in done.stdout, done.stdout
    assert "KERNELSCOPE_DB_URL" in done.stdout and "--db" in done.stdout.split("Explore it:")[0]
    suggested = _suggested(done.stdout)
    reads_store = [c for c in suggested if c[1] in ("exp", "workspace")]
    assert reads_store, suggested
    for command in reads_store:
        assert "--db" in command and command[command.index("--db") + 1].endswith("x.db"), command


def test_the_demo_on_the_default_store_says_every_command_reads_it(fake_demo, cli) -> None:  # type: ignore[no-untyped-def]
    done = cli("demo")
    assert done.exit_code == 0, done.stderr
    assert "every command reads it" in done.stdout
    assert all("--db" not in command for command in _suggested(done.stdout))


def test_the_demo_on_the_store_commands_read_without_db_adds_no_db(  # type: ignore[no-untyped-def]
    fake_demo, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, users_own_files: Path
) -> None:
    """Before: a store named by KERNELSCOPE_DB_URL (or the config file's db_url) was "not your
    default store: commands read it with --db ..., or with KERNELSCOPE_DB_URL=... exported",
    though it was exported, and every suggested command got an unneeded --db. Every command
    reads the store the resolver gives without --db: the demo compares with that."""
    for setting in ("env", "config"):
        store = tmp_path / f"{setting}.sqlite"
        if setting == "env":
            monkeypatch.setenv("KERNELSCOPE_DB_URL", str(store))
        else:
            monkeypatch.delenv("KERNELSCOPE_DB_URL")
            users_own_files.parent.mkdir(parents=True, exist_ok=True)
            users_own_files.write_text(f"db_url = {json.dumps(str(store))}\n")
        for args in ((), ("--db", str(store))):
            done = cli("demo", *args)
            assert done.exit_code == 0, done.stderr
            assert "every command reads it" in done.stdout and "not your" not in done.stdout, done.stdout
            assert all("--db" not in command for command in _suggested(done.stdout)), done.stdout


def test_the_demo_never_suggests_a_masked_password(fake_demo, cli) -> None:  # type: ignore[no-untyped-def]
    """Before: a PostgreSQL --db with a password was suggested as `--db postgresql://u:***@...`
    (public_url hides the password), a command that cannot log in. Now the sentence names the
    variable to export with the user's own URL, and no suggested command carries the mask."""
    done = cli("demo", "--db", "postgresql://team:s3cret@db.example.invalid/kernels")
    assert done.exit_code == 0, done.stderr
    assert "s3cret" not in done.stdout + done.stderr
    head = done.stdout.split("Explore it:")[0]
    assert "every command reads it" not in head and "KERNELSCOPE_DB_URL" in head, head
    assert "--db postgresql" not in head and "=postgresql" not in head, head
    assert all("--db" not in command for command in _suggested(done.stdout)), done.stdout


def test_demo_json_is_one_document(fake_demo, cli) -> None:  # type: ignore[no-untyped-def]
    """README and the CLI reference say every command that reports a result takes --json: the
    demo refused it (exit 1, no such option)."""
    done = cli("demo", "--json")
    assert done.exit_code == 0, (done.stdout, done.stderr)
    document = json.loads(done.stdout)
    assert document["workspace"].endswith("kernel_opt_vector_add")
    assert document["masked"] == ["v2"]
    assert document["file_lens"] == "next v4 | 1 masked"
    assert document["kernel_lenses"] == {"add_kernel": "best 9.03x v3"}
    assert document["db_url"].startswith("sqlite:")


def test_mask_half_in_git_says_its_files_are_not_committed(vector_add_ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """mask-half commits nothing (docs/memory.md), but said nothing of it: a later `git checkout
    .` silently undid the mask. The answer names the files and how to commit them, and the
    command it gives commits exactly them."""
    _git(vector_add_ws, "-c", "init.defaultBranch=main", "init", "-q")
    _git(vector_add_ws, "add", ".")
    _git(vector_add_ws, "commit", "-q", "-m", "start")
    done = cli("memory", "mask-half", "-w", str(vector_add_ws), "--seed", "0")
    assert done.exit_code == 0, done.stderr
    assert "not committed" in done.stdout, done.stdout
    line = next(line for line in done.stdout.splitlines() if "not committed" in line)
    command = line.split("`")[-2]  # the last backticked text: the commit
    assert command.startswith("git "), line
    subprocess.run(command, shell=True, check=True, capture_output=True, cwd=vector_add_ws.parent)
    assert _git(vector_add_ws, "status", "--porcelain") == ""


def test_mask_half_outside_git_says_nothing_of_commits(vector_add_ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    done = cli("memory", "mask-half", "-w", str(vector_add_ws), "--seed", "0")
    assert done.exit_code == 0, done.stderr
    assert "commit" not in done.stdout, done.stdout


HELP_COMMANDS = [
    ("memory", "unmask"),
    ("memory", "update"),
    ("memory", "mask-half"),
    ("compare",),
    ("exp", "top"),
    ("demo",),
    ("iterate",),
]


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=" ".join)
def test_help_shows_no_type_for_a_flag(cli, command: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    """typer 0.29's rich help printed `<bool>` beside every flag (`--help <bool>`), as if each
    took a value; its plain help leaves flags without one."""
    done = cli(*command, "--help")
    assert done.exit_code == 0, done.stderr
    assert "<bool>" not in done.stdout, done.stdout


def test_usage_lines_name_arguments_one_way(cli) -> None:  # type: ignore[no-untyped-def]
    """`compare [OPTIONS] {version_a} {version_b}` beside `[more_candidates]...`: braces for
    required arguments, brackets for optional ones. Required arguments are now plain names."""
    usage = cli("compare", "--help").stdout
    assert "{" not in usage and "compare [OPTIONS] version_a version_b" in usage, usage


def test_each_options_help_is_true_for_its_command(cli) -> None:  # type: ignore[no-untyped-def]
    """`memory unmask --include-baseline` said "Allow masking v0"; `--force`'s text about
    mask-half, restart and iterate was shown on update, mask and unmask too."""

    def words(*command: str) -> str:  # the help text as one line (rich's box and wrapping undone)
        return " ".join(cli(*command, "--help").stdout.replace("│", " ").split())

    unmask = words("memory", "unmask")
    assert "Allow masking v0" not in unmask and "unmask" in unmask.lower().split("--include-baseline")[1][:80]
    for command in ("update", "mask", "unmask"):
        text = words("memory", command)
        assert "mask-half" not in text and "iterate records" not in text, (command, text)
    for command in (("memory", "mask-half"), ("restart",)):
        text = words(*command)
        assert "skip unreadable memory files" in text, (command, text)


def test_h_is_help_and_version_prints_the_installed_version(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("-h").exit_code == 0 and "Usage: kernelscope" in cli("-h").stdout
    short = cli("memory", "unmask", "-h")
    assert short.exit_code == 0 and "Usage: kernelscope memory unmask" in short.stdout
    done = cli("--version")
    assert done.exit_code == 0 and done.stdout.strip() == f"kernelscope {installed_version('kernelscope')}"


@pytest.mark.parametrize("command", ["top", "failures", "list", "summary"])
def test_an_empty_listing_says_so_in_one_line(vector_add_ws: Path, cli, tmp_path: Path, command: str) -> None:  # type: ignore[no-untyped-def]
    """`exp top` printed `top 0` and an empty table, `exp failures` nothing at all: one behaviour
    now, a line saying that nothing matched, and no empty table."""
    db = str(tmp_path / "exp.sqlite")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("")
    assert cli("exp", "import", str(rows), "--db", db).exit_code == 0
    done = cli("exp", command, "-w", str(vector_add_ws), "--db", db)
    assert done.exit_code == 0, done.stderr
    assert "┏" not in done.stdout, done.stdout
    assert done.stdout.startswith("no "), done.stdout
