"""Versioned migrations of the experiment store.

`schema_version` holds one row with the version the database was last migrated to. Each
entry of `MIGRATIONS` upgrades from the previous version inside one transaction. A database
whose version is newer than `SCHEMA_VERSION` was written by a newer kernelscope and is
refused rather than misread.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, insert, inspect, select, text, update

from kernelscope.daemon.engine.store.errors import StoreError
from kernelscope.daemon.engine.store.kernel_stats import recompute_all
from kernelscope.daemon.engine.store.schema import (
    experiment_kernels,
    experiments,
    kernel_stats,
    metadata,
    schema_version,
)


def _migration_1(conn: Connection) -> None:
    """Initial schema."""
    metadata.create_all(conn, tables=[experiments, experiment_kernels])


def _migration_2(conn: Connection) -> None:
    """Add kernel_stats and fill it from the existing history."""
    metadata.create_all(conn, tables=[kernel_stats])
    recompute_all(conn)


MIGRATIONS: list[Callable[[Connection], None]] = [_migration_1, _migration_2]
SCHEMA_VERSION = len(MIGRATIONS)

# Columns a kernelscope `experiments` table has had from its first version: a table of that
# name without them belongs to another application.
_OWN_EXPERIMENT_COLUMNS = {"seq", "id", "created_at", "change_summary", "score", "is_buggy"}


def stored_version(conn: Connection, where: str) -> int:
    """The schema version of the database (0 when it has no kernelscope tables yet), read
    without writing; StoreError for another application's database or a newer schema."""
    tables = set(inspect(conn).get_table_names())
    if "schema_version" not in tables:
        foreign = tables - {"experiments", "experiment_kernels"}
        if "experiments" in tables:
            columns = {column["name"] for column in inspect(conn).get_columns("experiments")}
            if not columns >= _OWN_EXPERIMENT_COLUMNS:
                foreign.add("experiments")
        if foreign:
            raise StoreError(
                f"{where} is a database but not a kernelscope experiment store "
                f"(it has tables {sorted(tables)[:5]}); use another --db"
            )
        return 0
    current = conn.execute(select(schema_version.c.version)).scalar()
    if current is None:
        return 0
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"{where} has schema version {current}, newer than this kernelscope "
            f"understands ({SCHEMA_VERSION}); upgrade kernelscope to use it"
        )
    return int(current)


def migrate(conn: Connection, where: str, is_sqlite: bool) -> None:
    """Bring the database to SCHEMA_VERSION, inside the caller's write transaction (checked
    again here: another process may have migrated it since it was read)."""
    if not is_sqlite:
        conn.execute(text("SELECT pg_advisory_xact_lock(7283945)"))
    current = stored_version(conn, where)
    if "schema_version" not in inspect(conn).get_table_names():
        schema_version.create(conn)
    if conn.execute(select(schema_version.c.version)).scalar() is None:
        conn.execute(insert(schema_version).values(id=1, version=0))
    for version in range(current, SCHEMA_VERSION):
        MIGRATIONS[version](conn)
    if current < SCHEMA_VERSION:
        conn.execute(update(schema_version).values(version=SCHEMA_VERSION))
