"""Hostile CLI arguments and hostile memory files: every outcome is a documented exit status
(0, 1, 2 or 3) with a message, never a traceback, and nothing is deleted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow

COMMANDS = [
    ["memory", "list"],
    ["memory", "read"],
    ["memory", "update"],
    ["memory", "mask"],
    ["memory", "unmask"],
    ["memory", "mask-half"],
    ["memory", "create"],
    ["memory", "next-version"],
    ["memory", "summary"],
    ["exp", "top"],
    ["exp", "list"],
    ["exp", "show"],
    ["exp", "record"],
    ["exp", "update"],
    ["exp", "lineage"],
    ["exp", "failures"],
    ["exp", "summary"],
    ["exp", "import"],
    ["exp", "export"],
    ["exp", "shim"],
    ["memory", "init"],
    ["memory", "latest"],
    ["workspace"],
    ["schema"],
]
# Commands that run kernels, agents or a server: fuzzed against an empty folder (and, for
# demo, an empty examples folder), so whatever the arguments they end quickly.
RUNNING_COMMANDS = [["bench"], ["iterate"], ["restart"], ["demo"], ["serve"]]
FLAGS = [
    "--version",
    "--set",
    "--field",
    "--seed",
    "--json",
    "--dry-run",
    "--include-masked",
    "--force",
    "--max-results",
    "--min-score",
    "--status",
    "--summary",
    "--score",
    "-w",
    "--db",
    "--kernel",
]
token = st.one_of(
    st.sampled_from(FLAGS),
    st.sampled_from(
        [
            "v0",
            "v1",
            "v99",
            "v-1",
            "abc",
            "1e309",
            "NaN",
            "-5",
            "a.b.c=1",
            "x=",
            "=1",
            "performance.tflops=null",
            "'; DROP TABLE experiments; --",
            "\x00",
            "é" * 50,
            "",
        ]
    ),
    st.text(max_size=30),
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("cli-fuzz") / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    return ws


def _exit_status(argv: list[str]) -> int:
    """`kernelscope ARGV` in-process; an exception other than SystemExit fails the test."""
    from kernelscope.daemon.cli.main import main

    try:
        main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    return 0


@pytest.fixture
def scratch_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Hostile arguments name relative paths (`--db --db` opens a database called "--db"):
    they must land in a scratch directory, never in the checkout or the user's data."""
    scratch = tmp_path / "cwd"
    scratch.mkdir()
    monkeypatch.chdir(scratch)
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.delenv("KERNELSCOPE_DB_URL", raising=False)
    monkeypatch.delenv("KERNELSCOPE_CONFIG", raising=False)
    return scratch


def test_hostile_arguments(workspace: Path, cli, tmp_path: Path, scratch_cwd: Path) -> None:  # type: ignore[no-untyped-def]
    files_before = sorted(p.name for p in (workspace / "memory").glob("*.json"))

    @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(COMMANDS), st.lists(token, max_size=6))
    def run(command: list[str], extra: list[str]) -> None:
        argv = [*command, *extra]
        if "-w" not in extra:
            argv += ["-w", str(workspace)] if command[0] in ("memory", "workspace") else []
        if command[0] == "exp" and "--db" not in extra:
            argv += ["--db", str(tmp_path / "fuzz.sqlite")]
        result = cli(*argv)
        assert result.exit_code in (0, 1, 2, 3), (argv, result.exit_code, result.stderr[-500:])
        assert "Traceback" not in result.stderr, (argv, result.stderr[-2000:])

    run()
    files_after = sorted(p.name for p in (workspace / "memory").glob("*.json"))
    assert set(files_before) <= set(files_after)  # nothing deleted


def test_hostile_arguments_to_running_commands(cli, tmp_path: Path, scratch_cwd: Path) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "empty"
    empty.mkdir()

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(RUNNING_COMMANDS), st.lists(token, max_size=6))
    def run(command: list[str], extra: list[str]) -> None:
        argv = [*command, *extra]
        if command[0] in ("bench", "iterate", "restart"):
            argv += ["-w", str(empty)]
        elif command[0] == "demo":
            argv += ["--examples", str(empty), "--dir", str(tmp_path / "demo")]
        else:  # serve: an invalid port, so it never starts listening on stdin
            argv += ["--port", "0"]
        result = cli(*argv)
        assert result.exit_code in (0, 1, 2, 3), (argv, result.exit_code, result.stderr[-500:])
        assert result.exit_code != 0, argv  # nothing to run there: never a silent success
        assert "Traceback" not in result.stderr, (argv, result.stderr[-2000:])

    run()
    assert not list(empty.iterdir())  # nothing was created in the empty workspace


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=2000) | st.text(max_size=2000).map(str.encode))
@example(b"[" * 100_000 + b"]" * 100_000)  # json's RecursionError: a traceback from every command
@example(b'{"version": "v7", "performance": {"latency_us": ' + b"9" * 5000 + b"}}")  # int over 4300 digits
def test_hostile_memory_file(tmp_path_factory: pytest.TempPathFactory, content: bytes) -> None:

    ws = tmp_path_factory.mktemp("hostile") / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    (ws / "memory" / "v7.json").write_bytes(content)
    for argv in (
        ["memory", "list", "-w", str(ws)],
        ["memory", "read", "-w", str(ws)],
        ["memory", "mask-half", "-w", str(ws), "--seed", "1"],
        ["memory", "next-version", "-w", str(ws)],
        ["workspace", "-w", str(ws)],
    ):
        assert _exit_status(argv) in (0, 2), argv
    try:
        readable = isinstance(json.loads(content), dict)
    except (ValueError, RecursionError):
        readable = False
    if not readable:  # a corrupt file is reported, never rewritten (a valid object may be masked)
        assert (ws / "memory" / "v7.json").read_bytes() == content


_json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
_block_keys = st.sampled_from(
    ["target", "stop_conditions", "correctness_threshold", "bench", "hardware_specs", "x"]
)
_readme_piece = st.one_of(
    st.text(max_size=200),
    st.sampled_from(
        [
            "## Stop Conditions\n",
            "## Target\n",
            "## Hardware Specs\n",
            "## Correctness Threshold\n",
            "- latency <= 10 us\n",
            "- bandwidth >= 4.32 TB/s\n",
            "- TFLOPS >= 1e309\n",
            "- throughput >= -5 GB/s\n",
            "| metric | value |\n|---|---|\n| HBM | 4.8 TB/s |\n",
            "```kernelscope\n",
            "```\n",
            "<" * 5000 + "\n",
            "\x00\n",
        ]
    ),
    st.builds(
        lambda block: "```kernelscope\n" + json.dumps(block) + "\n```\n",
        st.dictionaries(_block_keys, _json_values, max_size=4),
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_readme_piece, max_size=12).map("".join))
def test_hostile_readme(tmp_path_factory: pytest.TempPathFactory, readme: str) -> None:
    """A README of any content (headings, units, machine blocks of random JSON, NUL bytes,
    huge lines): the CLI reports it (exit 0 or 2, no traceback), the lens texts are computed,
    and the README and memory files are never rewritten."""
    from kernelscope.daemon.engine.memory.scores import memory_scores
    from kernelscope.daemon.engine.views.lens_text import file_lens
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    ws = tmp_path_factory.mktemp("readme") / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    (ws / "README.md").write_text(readme, encoding="utf-8", errors="surrogatepass")
    before = {p.name: p.read_bytes() for p in [ws / "README.md", *(ws / "memory").glob("*.json")]}
    for argv in (
        ["workspace", "-w", str(ws)],
        ["memory", "mask-half", "-w", str(ws), "--seed", "1", "--dry-run"],
        ["memory", "summary", "-w", str(ws)],
    ):
        assert _exit_status(argv) in (0, 2), argv
    workspace = Workspace(ws)
    parsed = workspace.readme()
    assert isinstance(file_lens(workspace, readme=parsed), str)
    memory_scores(workspace.memory.scan(), parsed)
    after = {p.name: p.read_bytes() for p in [ws / "README.md", *(ws / "memory").glob("*.json")]}
    assert after == before
