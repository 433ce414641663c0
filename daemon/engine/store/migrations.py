"""Versioned migrations of the experiment store.

`schema_version` holds one row with the version the database was last migrated to. Each
entry of `MIGRATIONS` upgrades from the previous version inside one transaction. A database
whose version is newer than `SCHEMA_VERSION` was written by a newer kernelscope and is
refused rather than misread.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from kernelscope.daemon.engine.store.kernel_stats import recompute_all
from kernelscope.daemon.engine.store.schema import experiment_kernels, experiments, kernel_stats, metadata


def _migration_1(conn: Connection) -> None:
    """Initial schema."""
    metadata.create_all(conn, tables=[experiments, experiment_kernels])


def _migration_2(conn: Connection) -> None:
    """Add kernel_stats and fill it from the existing history."""
    metadata.create_all(conn, tables=[kernel_stats])
    recompute_all(conn)


MIGRATIONS: list[Callable[[Connection], None]] = [_migration_1, _migration_2]
SCHEMA_VERSION = len(MIGRATIONS)
