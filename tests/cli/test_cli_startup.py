"""Start-up of the `kernelscope` console script (issues #16 and #17): what each command imports,
and that the fast paths change nothing a user or an agent can see.

- `memory list|read|latest|update` run from `kernelscope.daemon.cli.fast` without typer, rich,
  pydantic or SQLAlchemy, and print byte for byte what the typer CLI prints, with the same exit
  status, on good and bad input (compared here on the same workspaces, and on random records);
- `serve` starts the LSP server without the CLI's other commands, and still serves;
- the typer CLI imports only the invoked command's module; `--help` is what eager registration
  printed, for the root (listed from the lazy table) and every command.

Speed is measured by benchmarks/cli_bench.py and benchmarks/lsp_bench.py, never asserted here.
"""

from __future__ import annotations

import inspect
import io
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelscope.daemon.cli import main as cli_main
from kernelscope.daemon.cli import output
from kernelscope.daemon.engine.memory.core import JOURNAL_NAME
from tests.conftest import EXAMPLES, write_record
from tests.support.fast_path import spy_on_fast_path
from tests.support.stdio_client import StdioClient

CONSOLE = str(Path(sys.executable).with_name("kernelscope"))
HEAVY = {"typer", "click", "rich", "pydantic", "sqlalchemy"}
# The console script's own code (`from kernelscope.daemon.cli.main import main; sys.exit(main())`),
# dumping sys.modules at exit into the file named by the first argument.
PROBE = """
import atexit, json, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
from kernelscope.daemon.cli.main import main
sys.exit(main())
"""
# The CLI registered as it was before the lazy table (plus blame and compare, added since):
# every module imported, every command added to one typer app, which main() then runs with the
# fast paths off.
EAGER_SETUP = """
import os
import typer
from kernelscope.daemon.cli import exp, memory
from kernelscope.daemon.cli import main as cli
from kernelscope.daemon.cli.bench import bench_command
from kernelscope.daemon.cli.blame import blame_command
from kernelscope.daemon.cli.check import check_command
from kernelscope.daemon.cli.compare import compare_command
from kernelscope.daemon.cli.demo import demo_command
from kernelscope.daemon.cli.iterate import iterate_command
from kernelscope.daemon.cli.restart import restart_command
from kernelscope.daemon.cli.serve import schema_command, serve_command
from kernelscope.daemon.cli.traces import import_traces_command
from kernelscope.daemon.cli.workspace import workspace_command

app = typer.Typer(**cli.APP_SETTINGS)  # (its name, help, -h and --help)
app.callback()(cli.root_callback())  # (--version)
app.add_typer(memory.app, name="memory")
app.add_typer(exp.app, name="exp")
app.command("workspace")(workspace_command)
app.command("bench")(bench_command)
app.command("demo")(demo_command)
app.command("iterate")(iterate_command)
app.command("restart")(restart_command)
app.command("serve")(serve_command)
app.command("schema")(schema_command)
app.command("check")(check_command)
app.command("blame")(blame_command)
app.command("compare")(compare_command)
app.command("import-traces")(import_traces_command)
cli.get_app = lambda: app
os.environ["KERNELSCOPE_NO_FAST_PATH"] = "1"
"""
EAGER = EAGER_SETUP + "import sys\ncli.main(sys.argv[1:])\n"
# Runs `kernelscope ARGV` for every ARGV in the JSON list argv[1], in this one process, and
# prints [[status, stdout, stderr], ...].
DRIVER = """
import contextlib, io, json, sys
from kernelscope.daemon.cli import main as cli
{setup}
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
    results.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


def _env(**extra: str) -> dict[str, str]:
    import os

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("KERNELSCOPE_NO_FAST_PATH", "FORCE_COLOR", "TTY_COMPATIBLE")
    }
    return {**env, "COLUMNS": "100", **extra}


def _modules(
    args: list[str], tmp_path: Path, **env: str
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(**env),
    )
    return proc, set(json.loads(out.read_text()))


def _top(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


# -- what each command imports ------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["list", "--json"],
        ["latest"],
        ["latest", "--json"],
        ["read"],
        ["read", "--unmasked-only", "--field", "performance.latency_us"],
        ["read", "--version", "v2"],
        ["read", "-v", "v4", "-f", "quality_gate.result", "--json"],
        ["update", "--version", "v1", "--set", "performance.tflops=1.5", "--set", "notes.x=null"],
        ["update", "-v", "v1", "-s", "correctness.status=PASS", "--json"],
    ],
)
def test_fast_memory_commands_import_neither_typer_nor_rich_nor_pydantic(
    command: list[str], vector_add_ws: Path, tmp_path: Path
) -> None:
    proc, modules = _modules(["memory", *command, "--workspace", str(vector_add_ws)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not _top(modules) & HEAVY, sorted(_top(modules) & HEAVY)
    assert "kernelscope.daemon.engine.memory.records" not in modules
    # the record rules, the workspace rule and the one reader of workspace files only (stdlib):
    # no pydantic model is built
    assert {n for n in modules if n.startswith("kernelscope.protocol")} <= {
        "kernelscope.protocol",
        "kernelscope.protocol.record_rules",
        "kernelscope.protocol.vocabulary",
        "kernelscope.protocol.workspace_files",
    }
    assert "filelock" not in modules  # the writer's lock is the standard library's flock
    if command[0] != "update":  # (the writer's atomic_io imports typing; a reader needs neither)
        assert "typing" not in modules and "dataclasses" not in modules  # 2-4 ms of start-up


def test_fast_memory_errors_import_no_heavy_modules(vector_add_ws: Path, tmp_path: Path) -> None:
    proc, modules = _modules(["memory", "read", "-w", str(vector_add_ws), "--version", "v99"], tmp_path)
    assert proc.returncode == 2 and "error: v99 not found" in proc.stderr
    assert not _top(modules) & HEAVY


def test_typer_commands_import_only_their_own_module(vector_add_ws: Path, tmp_path: Path) -> None:
    proc, modules = _modules(["--help"], tmp_path)
    assert proc.returncode == 0 and "memory" in proc.stdout and "exp" in proc.stdout
    assert not any(
        name.startswith("kernelscope.daemon.cli.")
        for name in modules
        - {
            "kernelscope.daemon.cli.main",
            "kernelscope.daemon.cli.output",
            "kernelscope.daemon.cli.help_format",  # (no command: typer's help corrected, stdlib only)
        }
    )
    assert not _top(modules) & {"pydantic", "sqlalchemy"}

    proc, modules = _modules(["memory", "summary", "-w", str(vector_add_ws)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "kernelscope.daemon.cli.memory" in modules and "typer" in modules
    assert "kernelscope.daemon.cli.exp" not in modules and "sqlalchemy" not in _top(modules)

    proc, modules = _modules(["exp", "--help"], tmp_path)
    assert proc.returncode == 0 and "sqlalchemy" not in _top(modules)


def test_serve_starts_without_the_cli_and_still_serves(tmp_path: Path) -> None:
    out = tmp_path / "modules.json"
    client = StdioClient([sys.executable, "-c", PROBE, str(out), "serve"], env=_env(), log=tmp_path / "log")
    try:
        reply = client.initialize(tmp_path, {"trusted": False})
        assert reply["result"]["capabilities"], reply
        assert reply["result"]["serverInfo"]["name"] == "kernelscope"
        client.request("shutdown", "shutdown", None)
        client.send({"jsonrpc": "2.0", "method": "exit", "params": None})
        assert client.process.wait(timeout=30) == 0
    finally:
        if client.process.poll() is None:
            client.process.kill()
    modules = set(json.loads(out.read_text()))
    # (pydantic is ~7 MB of the daemon's resident memory, whose goal is 1.3x a bare pygls
    # server: docs/benchmarks.md; it loads with the first lens or command, not at start)
    assert not _top(modules) & {"typer", "click", "rich", "sqlalchemy", "pydantic"}
    cli = {name for name in modules if name.startswith("kernelscope.daemon.cli.")}
    assert cli <= {
        "kernelscope.daemon.cli.main",
        "kernelscope.daemon.cli.fast",
        "kernelscope.daemon.cli.output",
    }


def test_the_console_script_serves(tmp_path: Path) -> None:
    client = StdioClient([CONSOLE, "serve"], env=_env(), log=tmp_path / "log")
    try:
        reply = client.initialize(tmp_path, {})
        assert "capabilities" in reply["result"], reply
        client.request("shutdown", "shutdown", None)
        client.send({"jsonrpc": "2.0", "method": "exit", "params": None})
        assert client.process.wait(timeout=30) == 0
    finally:
        if client.process.poll() is None:
            client.process.kill()


# -- help and usage errors: unchanged ---------------------------------------------------------


HELP_AND_USAGE = [
    [],
    ["--help"],
    ["serve", "--help"],
    ["schema", "--help"],
    ["memory", "--help"],
    ["memory", "list", "--help"],
    ["memory", "read", "--help"],
    ["memory", "update", "--help"],
    ["memory", "latest", "--help"],
    ["exp", "--help"],
    ["bench", "--help"],
    ["blame", "--help"],
    ["compare", "--help"],
    ["compare", "v1"],
    ["frobnicate"],
    ["memroy", "list"],
    ["memory", "list", "--bogus"],
    ["memory", "update", "-w", "WS"],
    ["memory", "read", "-w", "WS", "--version"],
    ["memory", "list", "-w", "WS", "positional"],
    ["memory", "list", "-w", "WS", "-w", "WS"],
    ["memory", "latest", "-w", "WS", "--json=yes"],
    ["serve", "--port", "0"],
    ["serve", "--port", "x"],
    ["serve", "--tcp", "extra"],
    ["serve", "--port=70000"],
    ["memory", "update", "-w", "WS", "-v", "v1", "--set"],
]


def test_help_and_usage_errors_are_what_eager_registration_printed(vector_add_ws: Path) -> None:
    cases = json.dumps(
        [[str(vector_add_ws) if arg == "WS" else arg for arg in args] for args in HELP_AND_USAGE]
    )
    runs = {}
    for name, setup in (("now", ""), ("before", EAGER_SETUP)):
        proc = subprocess.run(
            [sys.executable, "-c", DRIVER.format(setup=setup), cases],
            capture_output=True,
            text=True,
            timeout=300,
            env=_env(),
        )
        assert proc.returncode == 0, proc.stderr
        runs[name] = json.loads(proc.stdout)
    for args, now, before in zip(HELP_AND_USAGE, runs["now"], runs["before"], strict=True):
        assert now == before, args
        assert now[0] in (0, 1, 2) and "Traceback" not in now[2], args


@pytest.mark.parametrize("args", [["--help"], ["serve", "--help"], ["memory", "list", "--bogus"]])
def test_the_console_script_prints_the_same_help(args: list[str]) -> None:
    now = subprocess.run([CONSOLE, *args], capture_output=True, text=True, timeout=120, env=_env())
    before = subprocess.run(
        [sys.executable, "-c", EAGER, *args], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert (now.returncode, now.stdout, now.stderr) == (before.returncode, before.stdout, before.stderr)


def test_the_lazy_table_holds_each_commands_help() -> None:
    for name, (_target, summary) in cli_main.COMMANDS.items():
        command = cli_main.resolve_command(name)
        assert command.name == name
        first_paragraph = inspect.cleandoc(command.help or "").split("\n\n")[0]
        assert summary == first_paragraph, name


def test_every_command_module_is_in_the_lazy_table() -> None:
    """A module of daemon/cli with a `*_command` function or a typer `app` is registered."""
    import ast

    registered = {target.partition(":")[0] for target, _help in cli_main.COMMANDS.values()}
    folder = Path(cli_main.__file__).parent
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        commands = [
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_command")
        ]
        apps = [
            node
            for node in tree.body
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "app" for t in node.targets)
        ]
        if (commands or apps) and path.stem != "main":
            assert f"kernelscope.daemon.cli.{path.stem}" in registered, path.name


# -- the fast memory commands against the typer CLI, byte for byte ---------------------------


class Outcome:
    def __init__(self, code: int | str, out: str, err: str, fast_ran: bool) -> None:
        self.code, self.out, self.err, self.fast_ran = code, out, err, fast_ran

    def key(self) -> tuple[Any, ...]:
        return (self.code, self.out, self.err)


@pytest.fixture
def both(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`both(*args)`: run `kernelscope ARGS` in-process with the fast path and with typer only."""
    handled = spy_on_fast_path(monkeypatch)

    def once(args: tuple[str, ...], full: bool) -> Outcome:
        if full:
            monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
        else:
            monkeypatch.delenv("KERNELSCOPE_NO_FAST_PATH", raising=False)
        handled.clear()
        capsys.readouterr()
        try:
            cli_main.main(list(args))
            code: int | str = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
        except Exception as exc:  # the engine's own crash on a strange record: the same one
            code = f"raised {type(exc).__name__}: {exc}"
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err, any(handled))

    def run(*args: str, between: Callable[[], None] | None = None) -> tuple[Outcome, Outcome]:
        """Fast path first; `between` runs before the typer run (restore what the first wrote)."""
        quick = once(args, full=False)
        if between is not None:
            between()
        slow = once(args, full=True)
        return quick, slow

    return run


def _snapshot(ws: Path) -> Callable[[], dict[str, bytes]]:
    def files() -> dict[str, bytes]:
        return (
            {p.name: p.read_bytes() for p in sorted((ws / "memory").glob("*"))}
            if (ws / "memory").is_dir()
            else {}
        )

    return files


READS = [
    ("list",),
    ("list", "--json"),
    ("latest",),
    ("latest", "--json"),
    ("read",),
    ("read", "--json", "--include-masked"),
    ("read", "--unmasked-only", "--field", "performance.latency_us"),
    ("read", "--field", "quality_gate"),
    ("read", "--field", "version"),
    ("read", "--version", "v1"),
    ("read", "-v", "2", "-f", "performance.latency_us"),
    ("read", "--version=V3"),
    ("read", "--version", "v3", "--include-masked"),
    ("read", "--version", "v2", "--field", "no.such.field"),
    ("read", "--version", "v1", "--field", "pitfalls_and_fixes.0"),
    ("read", "--version", "v99"),
    ("read", "--version", "banana"),
    ("read", "--version", "v-1"),
    ("read", "--unmasked-only", "--include-masked"),
]


def _workspace_with_everything(ws: Path) -> None:
    """Masked, unmasked, string-masked, atrex pivots and carried numbers, foreign keys."""
    write_record(
        ws,
        0,
        masked=False,
        performance={"latency_us": 61.0, "bandwidth_gbps": 3000},
        quality_gate={"result": "PASS"},
        pitfalls_and_fixes=[{"lesson": "x"}],
    )
    write_record(
        ws,
        1,
        masked=False,
        performance={"latency_us": "52.4 us", "tflops": 12},
        correctness={"status": " pass "},
        optimization={"action_category": "tiling"},
        experience={"experiments": [{"name": "a"}, "b", {}]},
        open_directions=["", "x", {}, 0, None],
    )
    write_record(
        ws,
        2,
        masked="TRUE",
        performance={"latency_us": 50, "speedup_vs_ref_geomean": "1.3"},
        quality_gate={"result": "PASS"},
        optimization={"action_category": 7},
    )
    write_record(ws, 3, masked=True, quality_gate={"result": "FAIL"}, performance="not measured")
    write_record(
        ws,
        4,
        long_horizon={"status": "pivot"},
        performance={"latency_us": 40, "carried_from_version": "v2"},
        quality_gate={"result": "FAIL"},
    )
    write_record(
        ws,
        5,
        performance={"latency_us": 45, "measurement_subject": "unavailable"},
        unknown={"é": "ü"},
        timestamp="2026-12-01T00:00:00+00:00",
    )
    path = ws / "memory" / "v10.json"  # no version key: the file name says it
    path.write_text(json.dumps({"masked": False, "performance": {"latency_us": 30}}, indent=4) + "\n")


def _corrupt_workspace(ws: Path) -> None:
    write_record(ws, 0, performance={"latency_us": 10}, quality_gate={"result": "PASS"})
    write_record(ws, 1, quality_gate={"result": "PASS"})
    (ws / "memory" / "v2.json").write_text('{"version": "v2", "masked": true')  # torn
    (ws / "memory" / "v3.json").write_text("[1, 2]")
    write_record(ws, 4).write_text(json.dumps({"version": "v5"}))  # v4.json says v5
    (ws / "memory" / "v6.json").write_bytes(b"\xff\xfe not utf-8")
    (ws / "memory" / "notes.json").write_text("{}")


def _wide_workspace(ws: Path) -> None:
    """A corrupt file with a long name: the table is wider than 160 columns (rich folds it)."""
    write_record(ws, 0, performance={"latency_us": 10})
    (ws / "memory" / "v1.json").write_text("{" + " " * 200 + '"x": }')


def _unicode_workspace(ws: Path) -> None:
    write_record(ws, 0, quality_gate={"result": "pässed"}, performance={"latency_us": 3})
    (ws / "memory" / "v1.json").write_text("{ünicode")


def _pydantic_words_it(ws: Path) -> None:
    """Records only pydantic can judge (its message words the error): the full CLI says it."""
    write_record(ws, 0, performance={"latency_us": 10})
    (ws / "memory" / "v1.json").write_text(json.dumps({"version": 1}))
    (ws / "memory" / "v2.json").write_text(json.dumps({"version": "two"}))
    (ws / "memory" / "v3.json").write_text(json.dumps({"version": "v3", "timestamp": {"at": 1}}))
    (ws / "memory" / "v4.json").write_text(json.dumps({"version": "v4", "git_commit_hash": [1]}))


def _objective_workspace(ws: Path) -> None:
    """atrex v0.3's records (`performance_objective`, `performance_score`, a null geomean), one
    of another objective and one of v0.2: the fast path scores and labels them as typer does."""
    passed = {"quality_gate": {"result": "PASS"}}
    mean = "shape_speedup_arithmetic_mean"
    for version, latency, score in ((0, 10.0, 1.0), (1, 4.0, 2.5), (2, 5.0, 3.1)):
        performance = {"latency_us": latency, "performance_objective": mean, "performance_score": score}
        write_record(ws, version, performance={**performance, "speedup_vs_ref_geomean": None}, **passed)
    other = {"latency_us": 3.0, "performance_objective": "other", "performance_score": 9.0}
    write_record(ws, 3, performance={**other, "speedup_vs_ref_geomean": 2.9}, **passed)
    write_record(ws, 4, performance={"latency_us": 6.0, "speedup_vs_ref_geomean": "1.7"}, **passed)


def _hostile_workspace(ws: Path) -> None:
    """Records Python's json parses only to raise: a RecursionError, an integer over 4300 digits."""
    write_record(ws, 0, performance={"latency_us": 10})
    (ws / "memory" / "v1.json").write_text("[" * 100_000 + "]" * 100_000)
    (ws / "memory" / "v2.json").write_text(
        '{"version": "v2", "performance": {"latency_us": ' + "9" * 5000 + "}}"
    )


def _empty(ws: Path) -> None:
    (ws / "memory").mkdir()


def _nothing(ws: Path) -> None:
    pass


WORKSPACES = {
    "everything": _workspace_with_everything,
    "corrupt": _corrupt_workspace,
    "wide": _wide_workspace,
    "unicode": _unicode_workspace,
    "pydantic": _pydantic_words_it,
    "objective": _objective_workspace,
    "hostile": _hostile_workspace,
    "empty": _empty,
    "no-memory": _nothing,
}
# where the fast path must hand over to typer (the others it must run itself)
FALLS_BACK = {"pydantic"}


@pytest.mark.parametrize("kind", sorted(WORKSPACES))
def test_fast_reads_match_the_typer_cli(kind: str, tmp_path: Path, both) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir()
    WORKSPACES[kind](ws)
    for command in READS:
        quick, slow = both("memory", *command, "-w", str(ws))
        assert quick.key() == slow.key(), (kind, command)
        assert quick.code in (0, 1, 2), (kind, command, quick.code)
        if kind not in FALLS_BACK:
            assert quick.fast_ran, (kind, command)


def test_list_json_scores_atrex_objective_by_either_path(tmp_path: Path, both) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    _objective_workspace(ws)
    quick, slow = both("memory", "list", "--json", "-w", str(ws))
    assert quick.key() == slow.key() and quick.fast_ran
    rows = {row["version"]: row for row in json.loads(quick.out)}
    assert rows["v2"]["score"]["value"] == pytest.approx(3.1)
    assert rows["v2"]["score"]["source"] == "performance.performance_score"
    assert (rows["v2"]["speedup_vs_reference"], rows["v2"]["reference_aggregate"]) == (
        3.1,
        "mean over shapes",
    )
    assert rows["v3"]["score"]["source"] == "performance.latency_us"  # another objective: not compared
    assert (rows["v3"]["speedup_vs_reference"], rows["v3"]["reference_aggregate"]) == (2.9, "geomean")


def test_list_scores_a_bandwidth_target_as_the_lenses_do(tmp_path: Path, both) -> None:  # type: ignore[no-untyped-def]
    """Records with GB/s and no latency, a README whose target is bandwidth: `memory list`
    shows the score the lenses and `memory summary` show (1.50x), by either path (before: both
    paths showed no score). The fast path reads the README's stop conditions by readme.py's own
    lines; one with a ```kernelscope block, which only the model can judge, it hands over."""
    from kernelscope.daemon.engine.memory.records import MemoryManager
    from kernelscope.daemon.engine.memory.scores import memory_scores
    from kernelscope.daemon.engine.workspace.readme import parse_readme_file

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    shutil.copy(EXAMPLES / "layernorm" / "README.md", ws / "README.md")
    for version, gbps in (("v0", 1000.0), ("v1", 1500.0)):
        record = {
            "version": version,
            "performance": {"bandwidth_gbps": gbps},
            "quality_gate": {"result": "PASS"},
        }
        (ws / "memory" / f"{version}.json").write_text(json.dumps(record))
    quick, slow = both("memory", "list", "--json", "-w", str(ws))
    assert quick.key() == slow.key() and quick.fast_ran
    listed = {row["version"]: row["score"] for row in json.loads(slow.out)}
    lenses = memory_scores(MemoryManager(ws).scan(), parse_readme_file(ws / "README.md"))
    assert listed["v1"]["value"] == pytest.approx(1.5) == next(s.score for s in lenses if s.version == "v1")
    table, _ = both("memory", "list", "-w", str(ws))
    assert "1.50x" in table.out
    quick, slow = both("memory", "latest", "-w", str(ws))
    assert quick.key() == slow.key() and quick.fast_ran
    block = '\n```kernelscope\n{"stop_conditions": ["latency <= 5 us"]}\n```\n'
    (ws / "README.md").write_text((ws / "README.md").read_text() + block)
    quick, slow = both("memory", "list", "--json", "-w", str(ws))
    assert quick.key() == slow.key() and not quick.fast_ran
    assert all(row["score"] is None for row in json.loads(slow.out))  # a latency target: no GB/s ratio


def test_list_ranks_by_the_one_score_on_both_paths(tmp_path: Path, both) -> None:  # type: ignore[no-untyped-def]
    """Records with latency and TFLOP/s whose orders disagree (v2 does more work per run: more
    TFLOP/s, yet slower), a README whose target is TFLOP/s: both paths score by the latency
    ratio (ARCHITECTURE.md: from latency when both records have it), the fast one without
    handing over; a record with TFLOP/s and no latency is scored by the README's metric, the
    fast path reading the README's stop conditions itself."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    shutil.copy(EXAMPLES / "matmul" / "README.md", ws / "README.md")
    for number, performance in enumerate(
        (
            {"latency_us": 100.0, "tflops": 100.0},
            {"latency_us": 50.0, "tflops": 180.0},
            {"latency_us": 80.0, "tflops": 240.0},
            {"tflops": 300.0},
        )
    ):
        record = {"version": f"v{number}", "performance": performance, "quality_gate": {"result": "PASS"}}
        (ws / "memory" / f"v{number}.json").write_text(json.dumps(record))
    quick, slow = both("memory", "list", "--json", "-w", str(ws))
    assert quick.key() == slow.key() and quick.fast_ran
    scores = {row["version"]: row["score"] for row in json.loads(slow.out)}
    assert scores["v1"]["value"] == pytest.approx(2.0) and scores["v2"]["value"] == pytest.approx(1.25)
    assert scores["v2"]["source"] == "performance.latency_us"
    assert scores["v3"]["value"] == pytest.approx(3.0) and scores["v3"]["source"] == "performance.tflops"
    table, _ = both("memory", "list", "-w", str(ws))
    assert "2.00x" in table.out


def test_fast_reads_on_the_example(vector_add_ws: Path, both) -> None:  # type: ignore[no-untyped-def]
    for command in READS:
        quick, slow = both("memory", *command, "--workspace", str(vector_add_ws))
        assert quick.key() == slow.key() and quick.fast_ran, command
    table, _ = both("memory", "list", "-w", str(vector_add_ws))
    assert "┃ version ┃" in table.out and "CORRUPT" not in table.out


def test_a_journal_left_by_mask_half_is_shown_finished_by_the_engine(vector_add_ws: Path, both) -> None:  # type: ignore[no-untyped-def]
    """The fast path hands a cut-short mask-half to the engine, which shows it finished, says
    so, and writes nothing (the journal stays for the next write)."""
    memory = vector_add_ws / "memory"
    original = (memory / "v2.json").read_text()
    journal = memory / JOURNAL_NAME
    written = json.dumps({"files": {"v2.json": original.replace('"masked": false', '"masked": true')}})

    def cut_short() -> None:
        (memory / "v2.json").write_text(original)
        journal.write_text(written)

    cut_short()
    for args in (("list", "--json"), ("read", "-v", "v2", "--include-masked")):
        quick, slow = both("memory", *args, "-w", str(vector_add_ws), between=cut_short)
        assert quick.key() == slow.key() and not quick.fast_ran
        assert quick.err.count("was cut short: v2.json") == 1
        assert (memory / "v2.json").read_text() == original and journal.read_text() == written
        shown = json.loads(quick.out)
        v2 = shown if args[0] == "read" else next(row for row in shown if row["version"] == "v2")
        assert v2["masked"] is True


UPDATES = [
    ("--version", "v1", "--set", "performance.tflops=150.2", "--set", "correctness.status=PASS"),
    ("-v", "v1", "-s", 'open_directions=[{"direction": "tma"}]', "-s", "notes.deep.key=null", "--json"),
    ("--version", "1", "--set", "masked=true"),
    ("--version", "v1", "--set", "pitfalls_and_fixes.0.lesson=é"),
    ("--version", "v1", "--set", 'label="42"', "--set=score=1e400"),
    ("--version", "v1", "--set", "novalue"),
    ("--version", "v1", "--set", "x=NaN"),
    ("--version", "v1", "--set", "version=v7"),
    ("--version", "v1", "--set", "masked=5"),
    ("--version", "v1", "--set", ".a=1"),
    ("--version", "v2", "--set", "performance.tflops=3"),  # performance is a string there
    ("--version", "v2", "--set", "a=1", "--set", "performance.tflops=3"),  # all or nothing
    ("--version", "v3", "--set", "a=1"),  # no version key: the file name says it, as for reads
    ("--version", "v4", "--set", "a=1"),  # corrupt
    ("--version", "v9", "--set", "a=1"),
    ("--version", "nine", "--set", "a=1"),
    ("--version", "v1", "--set", "timestamp={}"),
    ("--version", "v1", "--set", "pitfalls_and_fixes.5=1"),
]


@pytest.mark.parametrize("git", [False, True])
def test_fast_update_matches_the_typer_cli(git: bool, tmp_path: Path, both) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    write_record(ws, 0, masked=False, performance={"latency_us": 10})
    (ws / "memory" / "v1.json").write_text(
        json.dumps({"version": "v1", "masked": False, "pitfalls_and_fixes": [{"lesson": "x"}]}, indent=4)
        + "\n"
    )
    write_record(ws, 2, performance="n/a")
    (ws / "memory" / "v3.json").write_text(json.dumps({"masked": False}) + "\n")
    (ws / "memory" / "v4.json").write_text("{torn")
    if git:  # (an empty .git folder is none to git, nor to kernelscope: memory/git_place.py)
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    pristine = tmp_path / "pristine"
    shutil.copytree(ws, pristine)
    files = _snapshot(ws)

    def restore() -> None:
        shutil.rmtree(ws)
        shutil.copytree(pristine, ws)

    written: list[dict[str, bytes]] = []
    for command in UPDATES:
        restore()
        written.clear()
        quick, slow = both(
            "memory", "update", "-w", str(ws), *command, between=lambda: (written.append(files()), restore())
        )
        assert quick.key() == slow.key(), command
        assert written[0] == files(), command
        assert quick.code in (0, 1, 2), (command, quick.code)
    lock_home = ws / ".git" / "kernelscope" if git else ws / "memory"
    assert (lock_home / ".kernelscope.lock").exists()  # the same lock file as the engine's


_token = st.one_of(
    st.sampled_from(
        [
            "--version",
            "-v",
            "--set",
            "-s",
            "--field",
            "-f",
            "--json",
            "--include-masked",
            "--unmasked-only",
            "-w",
            "--workspace",
            "--",
            "-",
            "--help",
            "--version=v1",
            "--set=a=1",
            "--json=1",
            "-wx",
            "-vv1",
            "v0",
            "v1",
            "v99",
            "V2",
            "3",
            "v-1",
            "abc",
            "",
            "a.b.c=1",
            "x=",
            "=1",
            "x=NaN",
            "masked=true",
            "performance.tflops=null",
            "version=v3",
            "\x00",
            "é" * 5,
            "1e309",
        ]
    ),
    st.text(max_size=8),
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(command=st.sampled_from(["list", "read", "latest", "update"]), extra=st.lists(_token, max_size=6))
def test_hostile_arguments_give_the_same_result_both_ways(
    vector_add_ws: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    both,  # type: ignore[no-untyped-def]
    command: str,
    extra: list[str],
) -> None:
    scratch = tmp_path_factory.getbasetemp() / "hostile-cwd"
    scratch.mkdir(exist_ok=True)
    monkeypatch.chdir(scratch)  # a relative -w lands here, never in the checkout
    pristine = tmp_path_factory.getbasetemp() / "hostile-pristine"
    if not pristine.exists():
        shutil.copytree(vector_add_ws, pristine)
    files = _snapshot(vector_add_ws)

    def restore() -> None:
        shutil.rmtree(vector_add_ws)
        shutil.copytree(pristine, vector_add_ws)

    restore()
    argv = ["memory", command, *extra]
    if "-w" not in extra and "--workspace" not in extra:
        argv += ["-w", str(vector_add_ws)]
    written: list[dict[str, bytes]] = []
    quick, slow = both(*argv, between=lambda: (written.append(files()), restore()))
    assert quick.key() == slow.key(), argv
    assert written[0] == files(), argv


def test_update_accepts_a_record_that_leaves_its_version_to_its_file_name(tmp_path: Path, both) -> None:  # type: ignore[no-untyped-def]
    """list, read and mask-half take v1.json without a "version" key as v1; update refused it
    ("version Field required") by either path. Now it updates it, and adds no key it was not asked to."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "v0.json").write_text(json.dumps({"version": "v0"}))
    target = ws / "memory" / "v1.json"
    original = json.dumps({"performance": {"latency_us": 5.0}}, indent=2)

    def restore() -> None:
        target.write_text(original)

    restore()
    quick, slow = both(
        "memory", "update", "-v", "v1", "--set", "performance.tflops=3", "-w", str(ws), between=restore
    )
    assert quick.key() == slow.key() and slow.code == 0, (quick, slow)
    assert json.loads(target.read_text()) == {"performance": {"latency_us": 5.0, "tflops": 3}}


@pytest.mark.parametrize("value", ["1e999", "-1e999", "[1, 1e999]", '{"x": 1e400}'])
def test_a_number_beyond_a_float_is_a_malformed_set_by_either_path(  # type: ignore[no-untyped-def]
    vector_add_ws: Path, both, value: str
) -> None:
    """`--set a=1e999` parses to inf: both paths refused it only when writing, exit 2 (missing
    or invalid data) with "Out of range float values are not JSON compliant: inf", a value the
    user never typed. It is a malformed --set, as `NaN` or a number of 4300 digits is: exit 1,
    one JSON error document of kind usage naming the number, nothing written."""
    files = _snapshot(vector_add_ws)
    before = files()
    for json_args in ((), ("--json",)):
        quick, slow = both(
            "memory", "update", "-w", str(vector_add_ws), "-v", "v1", "--set", f"a={value}", *json_args
        )
        assert quick.key() == slow.key() and quick.fast_ran, (quick.key(), slow.key())
        assert quick.code == 1 and files() == before, quick.key()
        said = json.loads(quick.out)["error"] if json_args else {"message": quick.err}
        assert "beyond" in said["message"] and "inf" not in said["message"].replace("Infinity", ""), said
        assert value.split("1e")[-1].rstrip("]}") in said["message"], said
        if json_args:
            assert (said["kind"], said["exit_code"]) == ("usage", 1), said


def test_fast_update_removes_an_orphaned_temp_file(vector_add_ws: Path, both) -> None:  # type: ignore[no-untyped-def]
    orphan = vector_add_ws / "memory" / ".kernelscope-tmp-v1.json.abc"
    orphan.write_text("half a record")
    quick, _slow = both("memory", "update", "-w", str(vector_add_ws), "-v", "v1", "-s", "a=1")
    assert quick.fast_ran and quick.code == 0 and not orphan.exists()


def test_update_of_a_linked_record_is_refused_and_changes_nothing(tmp_path: Path, both) -> None:  # type: ignore[no-untyped-def]
    """memory/v1.json a link to a record kept elsewhere: `memory update` renamed its temp file
    onto the link, which became a plain file (git: a type change) while the target kept the old
    content, and said Updated. Now either path refuses (exit 2), naming the link: the link and
    its target unchanged."""
    ws = tmp_path / "ws"
    write_record(ws, 0, performance={"latency_us": 10})
    kept = tmp_path / "elsewhere" / "v1.json"
    kept.parent.mkdir()
    link = ws / "memory" / "v1.json"
    link.symlink_to(kept)
    original = json.dumps({"version": "v1", "masked": False}, indent=4) + "\n"
    kept.write_text(original)
    seen: list[tuple[bool, str]] = []

    def check() -> None:
        seen.append((link.is_symlink(), kept.read_text()))

    quick, slow = both(
        "memory", "update", "-w", str(ws), "-v", "v1", "-s", "agent_notes=updated", between=check
    )
    check()
    assert quick.fast_ran and quick.key() == slow.key() and slow.code == 2, (quick.key(), slow.key())
    assert "is a link" in slow.err and "writes nothing through a link" in slow.err
    assert seen == [(True, original)] * 2
    assert sorted(p.name for p in kept.parent.iterdir()) == ["v1.json"]


def _in_the_way(kind: str, path: Path) -> str:
    """Put what `kind` names at `path`; the words the listing and the refusals use for it."""
    if kind == "folder":
        path.mkdir()
        (path / "keep").write_text("")
        return "v1.json is a folder, not a record file"
    if kind == "dangling link":
        path.symlink_to(path.parent / "gone.json")
        return f"v1.json is a link to a missing file ({path.parent / 'gone.json'}), not a record file"
    path.symlink_to(path.parent)
    return f"v1.json is a link to a folder ({path.parent}), not a record file"


@pytest.mark.parametrize("kind", ["folder", "dangling link", "link to a folder"])
def test_a_record_name_held_by_no_file_is_listed_and_holds_its_version(
    kind: str,
    tmp_path: Path,
    both,  # type: ignore[no-untyped-def]
) -> None:
    """memory/v1.json a folder or a dangling link: `list` left it out and `next-version` said
    v1, yet `create --version v1` said it "already exists (use --force ...)" and --force "Is a
    directory" (a dangling link: replaced by a plain file). Now both paths list it as
    unreadable, saying what it is, the next version is past it, and every write refuses it
    naming what is in the way, nothing changed."""
    ws = tmp_path / "ws"
    write_record(ws, 0, performance={"latency_us": 10})
    write_record(ws, 2, performance={"latency_us": 5})
    path = ws / "memory" / "v1.json"
    words = _in_the_way(kind, path)

    def entries() -> list[tuple[str, bool, bool]]:  # (the lock file a write takes aside)
        return sorted(
            (p.name, p.is_symlink(), p.is_dir())
            for p in (ws / "memory").iterdir()
            if p.name != ".kernelscope.lock"
        )

    before = entries()
    quick, slow = both("memory", "list", "--json", "-w", str(ws))
    assert quick.fast_ran and quick.key() == slow.key() and slow.code == 0
    rows = {row["version"]: row for row in json.loads(slow.out)}
    assert sorted(rows) == ["v0", "v1", "v2"]
    assert rows["v1"]["error"] == words and rows["v1"]["masked"] is None
    quick, slow = both("memory", "list", "-w", str(ws))
    assert quick.key() == slow.key() and "CORRUPT" in slow.out
    quick, slow = both("memory", "read", "-v", "v1", "-w", str(ws))
    assert quick.key() == slow.key() and slow.code == 2 and words in slow.err
    quick, slow = both("memory", "update", "-v", "v1", "-s", "a=1", "-w", str(ws))
    assert quick.key() == slow.key() and slow.code == 2 and words in slow.err
    quick, slow = both("memory", "next-version", "-w", str(ws))
    assert slow.code == 0 and slow.out.strip() == "v3"
    for force in ([], ["--force"]):
        quick, slow = both("memory", "create", "-v", "v1", *force, "-w", str(ws))
        what = words.removeprefix("v1.json is ").removesuffix(", not a record file")
        assert slow.code == 2 and f"refusing to write {path}: it is {what}, not a file" in slow.err, slow.err
    quick, slow = both("memory", "mask", "-v", "v1", "-w", str(ws))
    assert slow.code == 2 and words in slow.err
    assert entries() == before
    assert not (tmp_path / "ws" / "memory" / "gone.json").exists()  # (no file made where a link points)


# random records: every field the list and gate logic reads, with the shapes agents write
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**20),
    st.floats(allow_nan=False),
    st.text(max_size=6),
    st.sampled_from(["12.5 us", "PASS", "pass ", "fail", "", "v1", "candidate", "unavailable", "pivot"]),
)
_value = st.one_of(
    _scalar,
    st.lists(_scalar, max_size=3),
    st.dictionaries(st.sampled_from(["a", "name"]), _scalar, max_size=2),
)
_section = st.one_of(
    _value,
    st.fixed_dictionaries(
        {},
        optional={
            key: _value if key in ("latency_us", "experiments") else _scalar
            for key in (
                "latency_us",
                "tflops",
                "bandwidth_gbps",
                "result",
                "status",
                "action_category",
                "carried_from_version",
                "measurement_subject",
                "speedup_vs_ref_geomean",
                "experiments",
            )
        },
    ),
)
_record = st.fixed_dictionaries(
    {},
    optional={
        "masked": st.one_of(st.booleans(), st.sampled_from(["true", " TRUE", "no", 1, None])),
        "timestamp": _scalar,
        "performance": _section,
        "quality_gate": _section,
        "correctness": _section,
        "optimization": _section,  # not an object: the engine stumbles, and so does the fast path's typer
        "long_horizon": _section,
        "experience": _section,
        "open_directions": _value,
        "extra": _value,
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    records=st.lists(
        st.tuples(st.integers(0, 12), _record, st.sampled_from(["same", "absent", "other"])), max_size=5
    ),
    torn=st.booleans(),
)
def test_random_records_read_the_same_both_ways(
    tmp_path_factory: pytest.TempPathFactory, both, records, torn
) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path_factory.mktemp("random")
    (ws / "memory").mkdir()
    for number, record, version in records:
        data = dict(record)
        if version != "absent":
            data = {"version": f"v{number if version == 'same' else number + 1}", **data}
        (ws / "memory" / f"v{number}.json").write_text(json.dumps(data, indent=2) + "\n")
    if torn:
        (ws / "memory" / "v13.json").write_text('{"version": "v13"')
    for command in (
        ("list",),
        ("list", "--json"),
        ("latest",),
        ("read",),
        ("read", "--field", "performance.latency_us"),
    ):
        quick, slow = both("memory", *command, "-w", str(ws))
        assert quick.key() == slow.key(), command


# -- output: plain writes are what rich writes ------------------------------------------------


class _Pipe(io.StringIO):
    encoding = "utf-8"

    def isatty(self) -> bool:
        return False


_cell = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    columns=st.lists(_cell.filter(lambda c: len(c) < 15), min_size=1, max_size=6),
    rows=st.data(),
)
def test_plain_tables_are_what_rich_prints(
    monkeypatch: pytest.MonkeyPatch, columns: list[str], rows: Any
) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    cells = rows.draw(st.lists(st.lists(_cell, min_size=len(columns), max_size=len(columns)), max_size=5))
    plain = _Pipe()
    monkeypatch.setattr(sys, "stdout", plain)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setattr(output, "_STDOUT_WIDTH", 160)
    if not output._print_plain_table(columns, cells):
        return
    rendered = _Pipe()
    table = Table(title=None, show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))
    Console(file=rendered, highlight=False, soft_wrap=True, width=160).print(table)
    assert plain.getvalue() == rendered.getvalue()


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    message=st.text(
        alphabet=st.sampled_from([*"abcXYZ019 .,/-_()'\"", ":", "[", "]", "\\", "\t", "é", "😀"]), max_size=30
    )
)
def test_plain_messages_are_what_rich_prints(monkeypatch: pytest.MonkeyPatch, message: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    for kind in ("error", "warn", "info"):
        plain = _Pipe()
        monkeypatch.setattr(sys, "stdout", plain)
        monkeypatch.setattr(sys, "stderr", plain)
        monkeypatch.setattr(output, "_consoles", {})
        getattr(output, kind)(message)
        rendered = _Pipe()
        console = Console(file=rendered, highlight=False, soft_wrap=True, stderr=kind != "info")
        if kind == "info":
            console.print(message, markup=False)
        else:
            label = "[bold red]error:[/]" if kind == "error" else "[yellow]warning:[/]"
            console.print(f"{label} {escape(message)}", markup=True)
        assert plain.getvalue() == rendered.getvalue(), kind


def test_a_record_another_tool_wrote_with_nan_is_read_with_null_there(tmp_path: Path, both) -> None:  # type: ignore[no-untyped-def]
    """The seed's memory tool writes `"tflops": NaN` (Python's json.dump); since the CLI's JSON
    became strict, `memory read --unmasked-only --json` (a partial restart's first call) failed
    for the whole workspace over that one field. Both paths print the records, null there."""
    ws = tmp_path / "ws"
    write_record(ws, 0, performance={"latency_us": 10.0})
    (ws / "memory" / "v1.json").write_text(
        '{"version": "v1", "performance": {"tflops": NaN, "latency_us": 8.0}}\n'
    )
    quick, slow = both("memory", "read", "-w", str(ws), "--unmasked-only", "--json")
    assert quick.fast_ran and quick.key() == slow.key() and slow.code == 0, (quick.key(), slow.key())
    records = json.loads(slow.out)
    v1 = next(r for r in records if r["version"] == "v1")
    assert v1["performance"] == {"tflops": None, "latency_us": 8.0}
