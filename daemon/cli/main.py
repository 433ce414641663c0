"""Entry point of the `kernelscope` command.

Exit statuses (documented in the README): 0 success, 1 usage error, 2 missing or invalid
data. click reports usage errors with status 2 by default; this wrapper maps them to 1 so
that 2 always means "the data is the problem".
"""

from __future__ import annotations

import sys

import typer

from kernelscope.daemon.cli import exp, memory, output
from kernelscope.daemon.cli.bench import bench_command
from kernelscope.daemon.cli.demo import demo_command
from kernelscope.daemon.cli.iterate import iterate_command
from kernelscope.daemon.cli.restart import restart_command
from kernelscope.daemon.cli.serve import schema_command, serve_command
from kernelscope.daemon.cli.workspace import workspace_command
from kernelscope.daemon.engine.errors import KernelscopeError

app = typer.Typer(
    name="kernelscope",
    help="Editor backend and CLI for GPU kernel optimization workspaces.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(memory.app, name="memory")
app.add_typer(exp.app, name="exp")
app.command("workspace")(workspace_command)
app.command("bench")(bench_command)
app.command("demo")(demo_command)
app.command("iterate")(iterate_command)
app.command("restart")(restart_command)
app.command("serve")(serve_command)
app.command("schema")(schema_command)

EXIT_OK, EXIT_USAGE, EXIT_DATA = 0, 1, 2
CLICK_USAGE_STATUS = 2  # what click/typer exit with on a usage error


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with the documented status.

    typer runs in standalone mode (help, rich usage errors); the only way it exits with
    status 2 is a usage error, because engine errors propagate as exceptions, so 2 from
    typer is mapped to 1 and engine errors get their own status.
    """
    args = sys.argv[1:] if argv is None else argv
    # `kernelscope bench` documents 2 for usage errors (its 1 would be ambiguous with a
    # kernel's own exit statuses in scripts); every other command uses 1.
    usage_status = 2 if args[:1] == ["bench"] else EXIT_USAGE
    if args[:1] == ["bench"] and "--json" in args:
        sys.exit(_bench_json(args))
    try:
        app(args=args, prog_name="kernelscope")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
        sys.exit(usage_status if code == CLICK_USAGE_STATUS else code)
    except KernelscopeError as exc:
        output.error(str(exc))
        sys.exit(usage_status if exc.exit_code == EXIT_USAGE else exc.exit_code)
    except KeyboardInterrupt:
        output.error("interrupted")
        sys.exit(130)
    sys.exit(EXIT_OK)


def _bench_json(args: list[str]) -> int:
    """`kernelscope bench ... --json`: exactly one JSON document on stdout whatever happens, a
    bad flag included (click would print usage text on stderr and nothing on stdout, which
    leaves an agent parsing stdout with nothing to read). Non-standalone mode hands click's
    usage errors back here instead of printing them."""
    from kernelscope.daemon.cli.bench import EXIT_SETUP, usage_error_document

    # click's ClickException, whether typer vendors click (0.2x) or uses it (older releases)
    usage_errors = tuple(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    try:
        code = app(args=args, prog_name="kernelscope", standalone_mode=False)
    except usage_errors as exc:
        output.print_json(usage_error_document(exc.format_message()))  # type: ignore[attr-defined]
        return EXIT_SETUP
    except typer.Abort:
        output.error("interrupted")
        return 130
    return code if isinstance(code, int) else EXIT_OK


if __name__ == "__main__":
    main()
