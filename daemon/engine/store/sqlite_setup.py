"""SQLite specifics of the store: checking a store file before opening it, and the settings
every connection gets."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection

from kernelscope.daemon.engine.store.errors import StoreError


def sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    """WAL (readers never block writers), NORMAL sync (no fsync per commit in WAL; a commit
    survives a process crash, and the database is never corrupted by a power loss), a busy
    timeout so concurrent writers queue instead of failing, and manual transactions so that
    writes can take the lock up front with BEGIN IMMEDIATE."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.execute("PRAGMA journal_mode=WAL")
        # A 64 MiB page cache (allocated as used) keeps the index pages of a 100k-record
        # store in memory: inserts then write pages instead of reading them first.
        cursor.execute("PRAGMA cache_size=-65536")
        # Checkpoint the WAL every ~16 MiB instead of every 4 MiB: fewer, larger checkpoints
        # (each one fsyncs the database file) for the many small commits of iterations.
        cursor.execute("PRAGMA wal_autocheckpoint=4000")
        sync = os.environ.get("KERNELSCOPE_SQLITE_SYNC", "NORMAL").upper()
        if sync not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            sync = "NORMAL"
        cursor.execute(f"PRAGMA synchronous={sync}")
    finally:
        cursor.close()


def prepare_sqlite_file(path: Path, create: bool) -> bool:
    """Check (and, when `create`, make the folder of) a SQLite store file; True when it exists
    but this process may not write it (or its folder, where SQLite keeps its journal)."""
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not a database file")
    if path.exists():
        return not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))
    if not create:
        raise StoreError(
            f"no experiment store at {path} (check --db / KERNELSCOPE_DB_URL; "
            "a write such as `kernelscope exp record` creates one)"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the experiment store {path}: {exc.strerror or exc}") from None
    return False


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to a store file, also where its folder may not be written (a
    read-only mount, a teammate's home): SQLite reads a WAL database (every store is one) through
    a `-shm` file it must create beside it when none is there, and fails where it cannot
    ("unable to open database file", or SQLITE_READONLY_DIRECTORY for a folder of another
    user's). With no `-wal` content there is nothing beyond the main file to read, so the file
    is opened as immutable instead (no `-shm` needed) for one read: the store never pools these
    connections (a teammate's later commits go to a `-wal` an immutable connection ignores).
    Commits that only a `-wal` holds are refused by name, never left out."""
    uri = f"file:{quote(str(path))}?mode=ro"
    connection = sqlite3.connect(uri, uri=True, timeout=60, check_same_thread=False)
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return connection
    except sqlite3.OperationalError as exc:
        connection.close()
        message = str(exc)
        if "unable to open" not in message and "attempt to write a readonly database" not in message:
            raise
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StoreError(
            f"cannot read {path}: its latest commits are in {wal.name}, which SQLite reads through "
            f"a {path.name}-shm file it cannot create in {path.parent} (not writable here), and "
            f"reading without them would show an old history. A read by a user who may write "
            f"{path.parent} (its owner's `kernelscope exp list`) folds them into {path.name}; or "
            f"copy {path.name} and {wal.name} together to a folder you can write and read the copy"
        )
    return sqlite3.connect(uri + "&immutable=1", uri=True, timeout=60, check_same_thread=False)


def sqlite_on_connect_read_only(dbapi_connection: Any, _record: Any) -> None:
    """A read-only file: manual transactions and the busy timeout, no journal-mode change."""
    dbapi_connection.isolation_level = None
    dbapi_connection.execute("PRAGMA busy_timeout=60000")


def sqlite_on_begin(conn: Connection) -> None:
    if conn.get_execution_options().get("kernelscope_write"):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.exec_driver_sql("BEGIN")
