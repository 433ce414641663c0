"""`kernelscope check [FILE]`: the daemon's diagnostics for agents without an LSP client, by
the same code (views/diagnostics.text_notices), on a workspace iterate recorded (v0 BLOCK_SIZE
64, v1 1024)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.daemon.engine.workflows.demo import kernel_with_block
from tests.lsp.test_lsp import KERNEL, private_copy

pytestmark = pytest.mark.slow


@pytest.fixture
def ws(prepared: Path, tmp_path: Path) -> Path:
    return private_copy(prepared, tmp_path) / "kernel_opt_vector_add"


def test_a_recorded_versions_code_is_named(ws: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    text = tmp_path / "candidate.py"
    text.write_text(kernel_with_block(KERNEL, 64))
    result = cli("check", str(text), "-w", str(ws), "--db", str(ws.parent / "exp.sqlite"), "--json")
    assert result.exit_code == 0, result.stderr
    found = result.json()
    assert found["identical"] is True and found["workspace"] == str(ws)
    codes = [n["code"] for n in found["notices"]]
    assert codes == ["already_tried", "bench_on_save_off"], found
    assert found["notices"][0]["message"].startswith("identical to v0")


def test_a_near_text_names_the_values_tried(ws: Path, cli, users_own_files: Path) -> None:  # type: ignore[no-untyped-def]
    users_own_files.write_text(f'trusted = ["{ws}"]\n')  # trusted: no "re-benchmark is off"
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 256))
    result = cli("check", "-w", str(ws), "--db", str(ws.parent / "exp.sqlite"))
    assert result.exit_code == 0, result.stderr
    assert "near v" in result.stdout and "BLOCK_SIZE 256 never tried; 64 -> 1.00x v0" in result.stdout
    assert "not trusted" not in result.stdout
    assert "kernel.py:" in result.stdout and "tried:" in result.stdout  # the values tried, by line


def test_outside_a_workspace_it_names_what_is_missing(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "main.py"
    script.write_text("print(1)\n")
    result = cli("check", str(script))
    assert result.exit_code == 2
    assert f"{tmp_path.resolve()} is not an optimization workspace (no kernel.py)" in result.stderr


def test_static_rules_are_named_with_their_line(ws: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The static rules `bench` would fail the text on, before it runs (KernelBench's timing
    patch rule here), with the line an agent has to change."""
    text = tmp_path / "candidate.py"
    cheat = kernel_with_block(KERNEL, 64) + "\ntorch.cuda.Event.elapsed_time = lambda self, other: 0.001\n"
    text.write_text(cheat)
    result = cli("check", str(text), "-w", str(ws), "--db", str(ws.parent / "exp.sqlite"), "--json")
    assert result.exit_code == 3, result.stderr  # an error: `check && bench` stops (exited 0 before)
    static = [n for n in result.json()["notices"] if n["code"].startswith("static:")]
    assert static and static[0]["severity"] == "error", result.json()
    assert static[0]["line"] == len(cheat.splitlines())
    shown = cli("check", str(text), "-w", str(ws), "--db", str(ws.parent / "exp.sqlite"))
    assert f"candidate.py:{len(cheat.splitlines())}: error:" in shown.stdout
    assert shown.exit_code == 3, shown.stderr


def test_new_code_and_no_code_to_compare_with_are_told_apart(
    ws: Path, tmp_path: Path, cli, users_own_files: Path
) -> None:  # type: ignore[no-untyped-def]
    """ "Nothing matches" means new code only where recorded versions' code was compared: a
    workspace whose versions git does not hold (or none recorded) says it cannot tell."""
    users_own_files.write_text(f'trusted = ["{ws}"]\n')
    db = str(ws.parent / "exp.sqlite")
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 64) + "\n# a new idea\nX = 1\n")
    new = cli("check", "-w", str(ws), "--db", db, "--json")
    assert new.exit_code == 0, new.stderr
    assert new.json()["notices"] == [] and new.json()["versions_compared"] == 2, new.json()
    assert "(2 versions compared): new code" in cli("check", "-w", str(ws), "--db", db).stdout
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("README.md", "kernel.py"):
        (bare / name).write_bytes((ws / name).read_bytes())
    (bare / "memory").mkdir()  # a workspace with no version recorded yet
    users_own_files.write_text(f'trusted = ["{ws}", "{bare}"]\n')
    unknown = cli("check", "-w", str(bare), "--db", db, "--json")
    assert unknown.exit_code == 0, unknown.stderr
    assert unknown.json()["versions_compared"] == 0, unknown.json()
    shown = cli("check", "-w", str(bare), "--db", db).stdout
    assert "cannot tell whether this was tried" in shown and "new code" not in shown, shown


def test_new_code_in_another_file_names_that_file(ws: Path, cli, users_own_files: Path) -> None:  # type: ignore[no-untyped-def]
    """`check other.py` closed with "nothing recorded matches this kernel.py", naming a file it
    had not checked."""
    users_own_files.write_text(f'trusted = ["{ws}"]\n')
    (ws / "other.py").write_text(kernel_with_block(KERNEL, 64) + "\n# another idea\nY = 2\n")
    shown = cli("check", str(ws / "other.py"), "-w", str(ws), "--db", str(ws.parent / "exp.sqlite"))
    assert shown.exit_code == 0, shown.stderr
    assert "nothing recorded matches other.py (2 versions compared): new code" in shown.stdout, shown.stdout
    assert "kernel.py" not in shown.stdout, shown.stdout


def test_a_pattern_that_no_longer_covers_the_workspace_is_named(
    ws: Path, tmp_path: Path, cli, users_own_files: Path
) -> None:  # type: ignore[no-untyped-def]
    """`*` matches one folder name: a config whose `tmp/*` covered tmp/folder/kernel_opt_x only
    across the `/` no longer trusts it, and the notice says which pattern and why."""
    users_own_files.write_text(f'trusted = ["{tmp_path}/*"]\n')
    result = cli("check", "-w", str(ws), "--db", str(ws.parent / "exp.sqlite"), "--json")
    assert result.exit_code == 0, result.stderr
    off = [n for n in result.json()["notices"] if n["code"] == "bench_on_save_off"]
    assert off and f"`{tmp_path}/*` does not cover it: `*` matches one folder name" in off[0]["message"]
    users_own_files.write_text(f'trusted = ["{tmp_path}/*/kernel_opt_*"]\n')
    trusted = cli("check", "-w", str(ws), "--db", str(ws.parent / "exp.sqlite"), "--json")
    assert "bench_on_save_off" not in [n["code"] for n in trusted.json()["notices"]]


def test_an_invalid_config_file_is_named_not_a_traceback(ws: Path, cli, users_own_files: Path) -> None:  # type: ignore[no-untyped-def]
    """The settings `check` reads from the user's file are validated as the daemon validates
    them: an invalid one is an error naming the file and the setting, where it was an uncaught
    ValueError."""
    users_own_files.write_text("seeds = 0\n")
    result = cli("check", "-w", str(ws), "--db", str(ws.parent / "exp.sqlite"))
    assert result.exit_code == 2, result
    assert f"invalid settings in the config file {users_own_files}" in result.stderr
    assert "seeds" in result.stderr


def test_a_refused_trusted_pattern_is_dropped_with_a_warning(
    ws: Path, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """A relative pattern beside one that trusts the workspace: the check refused the whole
    file (exit 2); now the pattern alone is dropped, named on stderr, and the other one holds."""
    config = tmp_path / "config.toml"  # this test's own: the run's config file is every test's
    monkeypatch.setenv("KERNELSCOPE_CONFIG", str(config))
    config.write_text(f'trusted = ["kernel_opt_*", "{ws}"]\n')
    result = cli("check", "-w", str(ws), "--db", str(ws.parent / "exp.sqlite"), "--json")
    assert result.exit_code == 0, result
    assert f"config file {config}: trusted: 'kernel_opt_*' is not an absolute path" in result.stderr
    assert "bench_on_save_off" not in [n["code"] for n in result.json()["notices"]]


def test_a_record_it_cannot_read_is_named_not_left_out_silently(ws: Path, cli, users_own_files: Path) -> None:  # type: ignore[no-untyped-def]
    """memory/v1.json cut short (an editor's crash, `head -c 200` written back): the record is
    left out of the comparison, and `check` says so, as the lens does (before: `near v0 ...;
    64 -> 1.00x v0`, v1's value gone without a word, and `versions_compared: 1` read as data)."""
    users_own_files.write_text(f'trusted = ["{ws}"]\n')  # (no "re-benchmark is off" notice)
    record = ws / "memory" / "v1.json"
    record.write_bytes(record.read_bytes()[:200])
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 256))
    db = str(ws.parent / "exp.sqlite")
    result = cli("check", "-w", str(ws), "--db", db, "--json")
    assert result.exit_code == 0, result.stderr
    found = result.json()
    unreadable = [n for n in found["notices"] if n["code"] == "unreadable_records"]
    assert len(unreadable) == 1, found
    # what cannot be read (the path an agent opens), what that means here, the command that says why
    assert unreadable[0]["message"] == (
        "memory/v1.json cannot be read: left out of this comparison (`kernelscope memory list` says why)"
    ), unreadable
    assert found["unreadable_records"] == ["v1.json"], found
    shown = cli("check", "-w", str(ws), "--db", db).stdout
    assert "memory/v1.json cannot be read" in shown, shown


@pytest.mark.parametrize("json_out", [False, True])
@pytest.mark.parametrize("broken", ["unclosed", "nul"])
def test_a_kernel_that_does_not_parse_fails_as_bench_would(
    tmp_path: Path, cli, json_out: bool, broken: str
) -> None:  # type: ignore[no-untyped-def]
    """`check && bench` stops at a kernel.py that does not parse, with bench's status for it
    (exit 3: bench fails it as a compile error) and check's own report: the daemon's
    does_not_parse notice, nothing compared. Before: exit 2, an error document without
    notices or versions_compared, `(line None)` for a NUL byte, the line said twice."""
    text = (
        "import triton\n\ndef run(x:\n    return x\n"
        if broken == "unclosed"
        else "def run(x):\n    return x\0\n"
    )
    (tmp_path / "kernel.py").write_text(text)
    (tmp_path / "memory").mkdir()
    args = ["check", "-w", str(tmp_path), "--db", str(tmp_path / "exp.sqlite")]
    result = cli(*args, *(["--json"] if json_out else []))
    assert result.exit_code == 3, (result.stdout, result.stderr)
    if json_out:
        found = result.json()
        assert [n["code"] for n in found["notices"]] == ["does_not_parse"], found
        assert found["versions_compared"] is None and found["identical"] is None, found
        message = found["notices"][0]["message"]
        assert found["notices"][0]["line"] == (3 if broken == "unclosed" else None), found
    else:
        message = result.stdout
        assert "nothing else was checked" in message, message
        if broken == "unclosed":
            assert "kernel.py:3: warning:" in message, message
    assert "(line" not in message, message


def test_a_file_other_than_kernel_py_that_does_not_parse_is_named(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`check candidate.py` said "... paused until kernel.py parses" where kernel.py parses and
    candidate.py was the file checked."""
    (tmp_path / "kernel.py").write_text("def run(x):\n    return x\n")
    (tmp_path / "memory").mkdir()
    (tmp_path / "candidate.py").write_text("import triton\n\ndef run(x:\n    return x\n")
    args = ["check", str(tmp_path / "candidate.py"), "-w", str(tmp_path), "--db", str(tmp_path / "e.sqlite")]
    result = cli(*args, "--json")
    assert result.exit_code == 3, (result.stdout, result.stderr)
    message = result.json()["notices"][0]["message"]
    assert "kernel.py" not in message and "until candidate.py parses" in message, message
