"""The user's kernelscope configuration file (`$XDG_CONFIG_HOME/kernelscope/config.toml`, or
the file `KERNELSCOPE_CONFIG` names), and the user's state directory beside it
(`$XDG_STATE_HOME/kernelscope/`: restart briefs, command answers for Helix).

Read only from the user's own config directory: settings that run commands (`agent`, the
interpreter, trust) must never come from files inside a workspace, which may have been cloned
from anyone. Light on purpose: the daemon reads it at initialize.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelscope.daemon.engine import DataError, UsageError
from kernelscope.protocol import workspace_files

if TYPE_CHECKING:
    from kernelscope.protocol.settings import FolderSettings, UserSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ENV_CONFIG = "KERNELSCOPE_CONFIG"


def config_path() -> Path:
    explicit = os.environ.get(ENV_CONFIG)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kernelscope" / "config.toml"


def state_dir(part: str) -> Path:
    """`$XDG_STATE_HOME/kernelscope/<part>` (~/.local/state when unset): what kernelscope
    writes for the user outside every workspace. Not created here."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kernelscope" / part


def user_config() -> dict[str, Any]:
    """The file's settings ({} when there is none); DataError naming the file when unreadable."""
    path = config_path()
    try:
        return tomllib.loads(workspace_files.read_text(path))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DataError(f"cannot read config file {path}: {getattr(exc, 'strerror', None) or exc}") from None


def user_settings(warn: Callable[[str], object]) -> tuple[UserSettings, FolderSettings]:
    """The file's settings validated as the daemon validates them (protocol/settings.py), for
    the CLI commands that read them; `warn` is told, naming the file, of each refused `trusted`
    pattern dropped (the rest is kept); DataError naming the file and the setting when invalid."""
    from kernelscope.protocol.settings import user_settings_from

    try:
        user, folder, dropped = user_settings_from(user_config())
    except ValueError as exc:
        raise DataError(f"invalid settings in the config file {config_path()}: {exc}") from None
    for problem in dropped:
        warn(f"config file {config_path()}: {problem}")
    return user, folder


def command_words(command: str, what: str, empty: str) -> list[str]:
    """A setting that names a command (`agent`, `gate_command`) as the words it runs; UsageError
    when it is no valid shell words (an unclosed quote) or `empty`, before anything runs on it."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"{what} {command!r} is not valid shell words: {exc}") from None
    if not words:
        raise UsageError(empty)
    return words
