"""The user's kernelscope configuration file (`$XDG_CONFIG_HOME/kernelscope/config.toml`).

Read only from the user's own config directory: settings that run commands (`agent`) must
never come from files inside a workspace, which may have been cloned from anyone.
"""

from __future__ import annotations

import sys
from typing import Any

from kernelscope.daemon.engine import DataError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def user_config() -> dict[str, Any]:
    from kernelscope.daemon.engine.store.config import config_path

    path = config_path()
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise DataError(f"cannot read config file {path}: {exc}") from None
