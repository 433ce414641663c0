"""Where the experiment database lives.

Precedence: an explicit URL (`--db`), then `KERNELSCOPE_DB_URL`, then `db_url` in the config
file (`$XDG_CONFIG_HOME/kernelscope/config.toml`, or `KERNELSCOPE_CONFIG`), then the per-user
default `$XDG_DATA_HOME/kernelscope/experiments.sqlite` (XDG: `~/.local/share` when unset).
A plain path is taken as a SQLite file; `postgresql://` URLs use the psycopg driver.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kernelscope.daemon.engine.store.errors import StoreError
from kernelscope.daemon.engine.workspace.user_config import config_path, user_config

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - exercised on 3.10 only
    pass

ENV_URL = "KERNELSCOPE_DB_URL"


def default_db_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "kernelscope" / "experiments.sqlite"


def _config_url() -> str | None:
    from kernelscope.daemon.engine import DataError

    try:
        data = user_config()
    except DataError as exc:
        raise StoreError(str(exc)) from None
    value = data.get("db_url")
    if value is not None and not isinstance(value, str):
        raise StoreError(f"{config_path()}: db_url must be a string")
    return value


def normalize_url(url: str) -> str:
    """A SQLAlchemy URL from what a user typed: a path, sqlite:///..., postgresql://..."""
    text = url.strip()
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    if text.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    return text


def resolve_db_url(explicit: str | None = None) -> str:
    """The database URL to use, by the precedence in the module docstring."""
    for candidate in (explicit, os.environ.get(ENV_URL), _config_url()):
        if candidate:
            return normalize_url(candidate)
    return normalize_url(str(default_db_path()))


def public_url(url: str) -> str:
    """The URL without its password: what may be written into a workspace (records are
    committed) or shown."""
    from sqlalchemy.engine import make_url

    return make_url(normalize_url(url)).render_as_string(hide_password=True)
