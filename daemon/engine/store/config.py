"""Where the experiment database lives.

Precedence: an explicit URL (`--db`, or the editor's `dbUrl`), then `KERNELSCOPE_DB_URL`, then
`db_url` (or `dbUrl`) in the config file (`$XDG_CONFIG_HOME/kernelscope/config.toml`, or
`KERNELSCOPE_CONFIG`; the daemon reads it here too), then the per-user default
`$XDG_DATA_HOME/kernelscope/experiments.sqlite` (XDG: `~/.local/share` when unset).
A plain path is taken as a SQLite file; `postgresql://` URLs use the psycopg driver.
"""

from __future__ import annotations

import os
from pathlib import Path

from kernelscope.daemon.engine.store.errors import StoreError
from kernelscope.daemon.engine.workspace.user_config import config_path, user_config

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
    if not data:
        return None
    from kernelscope.protocol.settings import snake_key  # (cattrs: only when there is a file)

    # either spelling, as for every setting in the file (`dbUrl`, as editors write it, or `db_url`)
    value = next((v for k, v in data.items() if isinstance(k, str) and snake_key(k) == "db_url"), None)
    if value is not None and not isinstance(value, str):
        raise StoreError(f"{config_path()}: db_url must be a string")
    return value


def _sqlite_url(path_text: str, base: Path | None) -> str:
    path = Path(path_text).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    return f"sqlite:///{path.resolve()}"


def normalize_url(url: str, base: Path | None = None) -> str:
    """A SQLAlchemy URL from what a user typed: a path, sqlite:///..., postgresql://...

    `~` is expanded and a relative path is made absolute against `base` (the current
    directory when None), so the same text always names the same file. Anything that is not
    SQLite or PostgreSQL is refused with a StoreError rather than left to the driver."""
    text = url.strip()
    if not text:
        raise StoreError("empty database URL: give a SQLite path or a postgresql:// URL")
    if "://" not in text:
        return _sqlite_url(text, base)
    scheme, rest = text.split("://", 1)
    dialect = scheme.split("+", 1)[0].lower()
    if dialect in ("postgresql", "postgres"):
        return "postgresql+psycopg://" + rest if "+" not in scheme else text
    if dialect != "sqlite":
        raise StoreError(
            f"unsupported database URL {scheme}://...: kernelscope stores experiments in SQLite "
            "(a file path or sqlite:///PATH) or PostgreSQL (postgresql://user@host/db)"
        )
    path_text, question, query = rest.partition("?")
    if path_text in ("", "/:memory:"):
        return text  # an in-memory database
    if not path_text.startswith("/"):
        raise StoreError(
            f"{text}: sqlite:// with two slashes names a host; write sqlite:///PATH (three "
            "slashes, then the path) or just the path"
        )
    return _sqlite_url(path_text[1:], base) + question + query


def resolve_db_url(explicit: str | None = None) -> str:
    """The database URL to use, by the precedence in the module docstring. A relative path in
    the config file is taken from the config file's folder, not the current directory."""
    for candidate in (explicit, os.environ.get(ENV_URL)):
        if candidate:
            return normalize_url(candidate)
    configured = _config_url()
    if configured:
        return normalize_url(configured, config_path().expanduser().resolve().parent)
    return normalize_url(str(default_db_path()))


def is_default_url(url: str) -> bool:
    """Whether `url` is the per-user default store (a first read may create it empty)."""
    return url == normalize_url(str(default_db_path()))


def read_without_db(url: str) -> bool:
    """Whether commands given no --db read `url`: the store `resolve_db_url` gives them
    (KERNELSCOPE_DB_URL, the config file's db_url, else the per-user default). False when that
    cannot be resolved (a config file kernelscope cannot read)."""
    try:
        return normalize_url(url) == resolve_db_url()
    except StoreError:
        return False


def has_password(url: str) -> bool:
    """Whether `url` carries a password (`public_url` shows it as ***: not a URL to log in with)."""
    from sqlalchemy.engine import make_url

    return make_url(normalize_url(url)).password is not None


def public_url(url: str) -> str:
    """The URL without its password: what may be written into a workspace (records are
    committed) or shown."""
    from sqlalchemy.engine import make_url

    return make_url(normalize_url(url)).render_as_string(hide_password=True)
