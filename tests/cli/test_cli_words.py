"""What the CLI tells a new user, checked for being true: the demo's store sentence and the
commands it suggests, mask-half's uncommitted files, demo --json, the help text (no `<bool>`
on flags, one true text per option, -h, --version), the not-a-workspace way out, and one
behaviour for an empty experiment listing."""

from __future__ import annotations

from importlib.metadata import version as installed_version

import pytest

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]


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
