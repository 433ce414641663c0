"""Copying a prepared test folder that holds SQLite experiment stores.

A store connection this process still holds (the engine keeps one per database) may remove
its `-wal` file at any moment, on close: a plain copytree that listed the file can then fail on
it (seen in CI under load). The copy first moves every store's WAL into its database file, then
leaves WAL and shared-memory files out; the stores' workspace paths are moved along with the
folder, so the copy's experiments belong to the copy's workspaces; with `records=True` so are the
store URLs that memory records name (`kernelscope.store`; the records are then changed files in
the workspace's git tree)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

STORE_TABLES = ("experiments", "experiment_kernels", "kernel_stats")


def copy_with_stores(source: Path, target: Path, records: bool = False) -> Path:
    for database in source.rglob("*.sqlite"):
        with sqlite3.connect(database) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.close()
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.sqlite-wal", "*.sqlite-shm"))
    old, new = str(source), str(target)
    for database in target.rglob("*.sqlite"):
        connection = sqlite3.connect(database)
        try:
            tables = {
                row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            for table in STORE_TABLES:
                if table in tables:
                    connection.execute(
                        f"UPDATE {table} SET workspace = ? || substr(workspace, ?) WHERE workspace = ? "
                        "OR workspace LIKE ? ESCAPE '\\'",
                        (
                            new,
                            len(old) + 1,
                            old,
                            old.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%",
                        ),
                    )
            connection.commit()
        finally:
            connection.close()
    for record in target.rglob("memory/v*.json") if records else ():
        text = record.read_text()
        if old in text:
            record.write_text(text.replace(old, new))
    return target
