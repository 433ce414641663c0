"""Entry point of the `kernelscope` command.

Exit statuses (documented in the README): 0 success, 1 usage error, 2 missing or invalid
data. click reports usage errors with status 2 by default; this wrapper maps them to 1 so
that 2 always means "the data is the problem", except for `bench`, whose own documented
contract (its --help, docs/harness.md) keeps 2 for a usage or setup error.

Start-up is paid on every call (agents run `memory read/list/update/latest` many times per
iteration, editors start `serve`), so this module imports nothing heavy:
- `memory list|read|latest|update` and `serve` run from `fast` (no typer, rich, pydantic or
  SQLAlchemy) whenever it can vouch for the result, and fall through to typer otherwise;
- typer's root group is lazy (`LazyGroup`): a command's module is imported when that command
  runs; the root `--help` lists them all from `COMMANDS` without importing any.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, MutableMapping

TYPE_CHECKING = False  # (typing itself is 2 ms of start-up: annotations only)
if TYPE_CHECKING:
    from typing import Any

EXIT_OK, EXIT_USAGE, EXIT_DATA = 0, 1, 2
CLICK_USAGE_STATUS = 2  # what click/typer exit with on a usage error
# What typer returns, not in standalone mode, for a Ctrl-C (typer/core.py: KeyboardInterrupt
# becomes Exit(130), whose code it returns, printing nothing); no command exits 130 through
# typer itself (`bench --candidates`, which reports its interrupted run, raises SystemExit).
TYPER_INTERRUPTED = 130

# name -> ("module:attribute", first paragraph of its help), in the order `--help` lists them.
# The attribute is a command function or, for a command group, its typer.Typer app. A new
# command module is one line here; tests/cli/test_cli_startup.py checks the help texts against
# the modules and that `kernelscope --help` is what eager registration printed.
COMMANDS: dict[str, tuple[str, str]] = {
    "workspace": (
        "kernelscope.daemon.cli.workspace:workspace_command",
        "Show the workspace: targets, stop conditions, kernels, memory, and its experiment store.",
    ),
    "bench": (
        "kernelscope.daemon.cli.bench:bench_command",
        "Benchmark and gate the kernel: correctness on several seeds, then A/B timing.",
    ),
    "demo": (
        "kernelscope.daemon.cli.demo:demo_command",
        "Create a workspace, record v0 and three measured improvements, mask half, show the lenses.",
    ),
    "iterate": (
        "kernelscope.daemon.cli.iterate:iterate_command",
        "Run one iteration: gate + benchmark vs v0 and the parent, record, commit.",
    ),
    "restart": (
        "kernelscope.daemon.cli.restart:restart_command",
        "Mask half of the memory, launch a fresh agent with a brief, verify what it did.",
    ),
    "serve": (
        "kernelscope.daemon.cli.serve:serve_command",
        "Run the LSP daemon (stdio by default; --tcp binds 127.0.0.1 only).",
    ),
    "schema": (
        "kernelscope.daemon.cli.serve:schema_command",
        "Print the JSON Schema of every command's parameters and result, and the settings.",
    ),
    "check": (
        "kernelscope.daemon.cli.check:check_command",
        "Check kernel.py against the static rules and every recorded version before spending GPU time.",
    ),
    "blame": (
        "kernelscope.daemon.cli.blame:blame_command",
        "Show, for each line of kernel.py, the version that introduced it and its measured effect.",
    ),
    "compare": (
        "kernelscope.daemon.cli.compare:compare_command",
        "Compare two versions: code diff, per-configuration deltas, gates and actions.",
    ),
    "import-traces": (
        "kernelscope.daemon.cli.traces:import_traces_command",
        "Import FlashInfer-Bench / SOL-ExecBench Trace records (JSON lines) as experiments.",
    ),
    "memory": (
        "kernelscope.daemon.cli.memory:app",
        "Read and change memory/v<N>.json records (a superset of the seed's memory_manager.py).",
    ),
    "exp": (
        "kernelscope.daemon.cli.exp:app",
        "Kernel experiment history (the seed's kernel-exp-history API).",
    ),
}

APP_SETTINGS: dict[str, Any] = {
    "name": "kernelscope",
    "help": "Editor backend and CLI for GPU kernel optimization workspaces.",
    "no_args_is_help": True,
    "pretty_exceptions_enable": False,
    "add_completion": False,
    "context_settings": {"help_option_names": ["-h", "--help"]},  # (subcommands inherit it)
}

_app: Any = None


def __getattr__(name: str) -> Any:
    """`main.app`: the typer app, built on first use (PEP 562)."""
    if name == "app":
        return get_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resolve_command(name: str) -> Any:
    """The click command typer builds for `name` (imports its module): the same object eager
    registration on the root app made (`app.command(name)(f)` / `app.add_typer(sub, name=name)`)."""
    import typer

    from kernelscope.daemon.cli.help_format import tidy_typer_help

    tidy_typer_help()
    module_name, _, attribute = COMMANDS[name][0].partition(":")
    __import__(module_name)  # (not importlib.import_module: `python -X importtime` shows this one)
    target = getattr(sys.modules[module_name], attribute)
    holder = typer.Typer(**APP_SETTINGS)
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
    else:
        holder.command(name)(target)
    return typer.main.get_group(holder).commands[name]


class _LazyCommands(MutableMapping[str, "Any"]):
    """The root group's `commands`: every name from COMMANDS, resolved on first access."""

    def __init__(self) -> None:
        self.resolved: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self.resolved:
            if name not in COMMANDS:
                raise KeyError(name)
            self.resolved[name] = resolve_command(name)
        return self.resolved[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self.resolved[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("commands cannot be removed")

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (name for name in self.resolved if name not in COMMANDS)

    def __len__(self) -> int:
        return len(set(COMMANDS) | set(self.resolved))

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in self.resolved


def get_app() -> Any:
    """The root typer app, with the lazy group as its click class."""
    global _app
    if _app is not None:
        return _app
    import typer
    from typer.core import TyperCommand, TyperGroup

    class LazyGroup(TyperGroup):
        """typer's group, with commands imported when invoked. Its help lists them from
        COMMANDS (placeholder commands with the same name and help), importing none."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.lazy_commands = _LazyCommands()
            self.commands = self.lazy_commands
            self._listing = False

        def format_help(self, ctx: Any, formatter: Any) -> None:
            self._listing = True
            try:
                super().format_help(ctx, formatter)
            finally:
                self._listing = False

        def list_commands(self, ctx: Any) -> list[str]:
            return list(self.commands)  # names only (typer's own asks for .items(): every import)

        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            if self._listing and cmd_name in COMMANDS and cmd_name not in self.lazy_commands.resolved:
                return TyperCommand(name=cmd_name, help=COMMANDS[cmd_name][1])
            return self.commands.get(cmd_name)

    from kernelscope.daemon.cli.help_format import tidy_typer_help

    tidy_typer_help()
    app = typer.Typer(cls=LazyGroup, **APP_SETTINGS)
    app.callback()(root_callback())  # makes typer build a group; the commands come from LazyGroup
    _app = app
    return app


def root_callback() -> Any:
    """The root's own options: `--version` (the installed distribution's, as pip shows it)."""
    import typer

    def show_version(value: bool) -> None:
        if value:
            from importlib.metadata import version

            print(f"kernelscope {version('kernelscope')}")
            raise typer.Exit()

    def root(
        version: bool = typer.Option(
            False,
            "--version",
            help="Print the installed version and exit.",
            is_eager=True,
            callback=show_version,
        ),
    ) -> None:
        pass

    return root


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with the documented status.

    typer runs in standalone mode (help, rich usage errors); the only way it exits with
    status 2 is a usage error, because engine errors propagate as exceptions, so 2 from
    typer is mapped to 1 and engine errors get their own status.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        _main(args)
    except BrokenPipeError:
        # the reader went away (`kernelscope exp list --json | head`): nothing more to say, and
        # no traceback about it; stdout to /dev/null so the interpreter's last flush is quiet
        # (Python's documented way; the fast path does the same)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


def _main(args: list[str]) -> None:
    fast_path = (args[:1] == ["memory"] and len(args) > 1) or args[:1] == ["serve"]
    if fast_path and not os.environ.get("KERNELSCOPE_NO_FAST_PATH"):  # set: typer runs all (to compare)
        from kernelscope.daemon.cli import fast

        code = fast.memory(args[1], args[2:]) if args[0] == "memory" else fast.serve(args[1:])
        if code is not None:
            sys.exit(code)

    if args[:1] != ["serve"]:
        _exit_on_sigterm()
        _engine_warnings_to_stderr()
    from kernelscope.daemon.cli import output
    from kernelscope.daemon.engine import KernelscopeError

    # `kernelscope bench` documents 2 for usage errors (its 1 would be ambiguous with a
    # kernel's own exit statuses in scripts); every other command uses 1.
    usage_status = 2 if args[:1] == ["bench"] else EXIT_USAGE
    if args[:1] == ["bench"] and "--json" in args:
        sys.exit(_bench_json(args))
    if "--json" in args and "--help" not in args:
        sys.exit(_json(args))
    try:
        get_app()(args=args, prog_name="kernelscope")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
        sys.exit(usage_status if code == CLICK_USAGE_STATUS else code)
    except (KernelscopeError, KeyboardInterrupt) as exc:  # (output.failure: the one mapping)
        code = output.failed(exc, json_out=False)
        sys.exit(usage_status if code == EXIT_USAGE else code)
    sys.exit(EXIT_OK)


def _engine_warnings_to_stderr() -> None:
    """What the memory engine warns of (a cut-short mask-half a read shows finished, a file
    its finishing kept) printed as the CLI's other warnings are (`output.warn`), each once
    per command (a command reads memory/ more than once)."""
    import logging

    from kernelscope.daemon.cli import output

    said: set[str] = set()

    class ToWarn(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if message not in said:
                said.add(message)
                output.warn(message)

    logger = logging.getLogger("kernelscope.daemon.engine.memory")
    for old in [h for h in logger.handlers if h.get_name() == "kernelscope-cli"]:  # (main run twice)
        logger.removeHandler(old)
    handler = ToWarn(logging.WARNING)
    handler.set_name("kernelscope-cli")
    logger.addHandler(handler)


def _exit_on_sigterm() -> None:
    """SIGTERM raises SystemExit (status 143) instead of ending the process where it stands, so
    `finally` blocks run: a benchmark's runner (in its own session, beyond the reach of the
    terminal's signals) is killed and its temporary folders removed, as on Ctrl-C. Not for
    `serve`, which has its own shutdown."""
    import signal

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    with contextlib.suppress(ValueError):  # not the main thread (an embedding caller)
        signal.signal(signal.SIGTERM, terminate)


def _json(args: list[str]) -> int:
    """Any other command with `--json`: its result, or one JSON error document on stdout for a
    usage error or a refusal (output.failed), with the documented exit status."""
    import typer

    from kernelscope.daemon.cli import output
    from kernelscope.daemon.engine import KernelscopeError

    reported: tuple[type[BaseException], ...] = (
        *(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"),
        KernelscopeError,
        typer.Abort,
        KeyboardInterrupt,
    )
    try:
        code = get_app()(args=args, prog_name="kernelscope", standalone_mode=False)
    except reported as exc:
        return output.failed(exc, json_out=True)
    except typer.Exit as exc:
        return int(exc.exit_code)
    if code == TYPER_INTERRUPTED:  # a Ctrl-C: the interrupted document, as the fast path prints
        return output.failed(KeyboardInterrupt(), json_out=True)
    return code if isinstance(code, int) else EXIT_OK


def _bench_json(args: list[str]) -> int:
    """`kernelscope bench ... --json`: exactly one JSON document on stdout whatever happens, a
    bad flag included (click would print usage text on stderr and nothing on stdout, which
    leaves an agent parsing stdout with nothing to read). Non-standalone mode hands click's
    usage errors back here instead of printing them."""
    import typer

    from kernelscope.daemon.cli import output
    from kernelscope.daemon.cli.bench import usage_error_document
    from kernelscope.protocol.bench import EXIT_SETUP

    # click's ClickException, whether typer vendors click (0.2x) or uses it (older releases)
    usage_errors: tuple[type[BaseException], ...] = tuple(
        c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
    )
    try:
        code = get_app()(args=args, prog_name="kernelscope", standalone_mode=False)
    except usage_errors as exc:
        output.print_json(usage_error_document(exc.format_message()))  # type: ignore[attr-defined]
        return EXIT_SETUP
    except typer.Abort:
        output.error("interrupted")
        return 130
    if code == TYPER_INTERRUPTED:  # a Ctrl-C mid-run: bench's own document, no verdict in it
        output.print_json(usage_error_document("interrupted before a verdict", kind="interrupted"))
        return TYPER_INTERRUPTED
    return code if isinstance(code, int) else EXIT_OK


if __name__ == "__main__":
    main()
