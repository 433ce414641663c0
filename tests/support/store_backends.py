"""Backends the store tests run against: SQLite always, PostgreSQL when a server is given.

`KERNELSCOPE_TEST_PG_URL` names the server (`.ci/run` starts one with scripts/postgres.sh).
Locally without it the PostgreSQL half is skipped with the reason; in CI (CI=true) a missing
or unreachable server fails the run instead.
"""

from __future__ import annotations

import os

import pytest
from sqlalchemy import create_engine, text

PG_URL = os.environ.get("KERNELSCOPE_TEST_PG_URL")


def reset_postgres(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "DROP TABLE IF EXISTS kernel_stats, experiment_kernels, experiments, schema_version, other_app"
                )
            )
    finally:
        engine.dispose()


def backend_url(kind: str, tmp_path: os.PathLike[str]) -> str:
    if kind == "sqlite":
        return f"sqlite:///{os.fspath(tmp_path)}/experiments.sqlite"
    if not PG_URL:
        message = "no PostgreSQL server: set KERNELSCOPE_TEST_PG_URL (scripts/postgres.sh starts one)"
        if os.environ.get("CI"):
            pytest.fail(message + " -- required in CI")
        pytest.skip(message)
    try:
        reset_postgres(PG_URL)
    except Exception as exc:  # unreachable server
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL at KERNELSCOPE_TEST_PG_URL is unreachable: {exc}")
        pytest.skip(f"PostgreSQL at KERNELSCOPE_TEST_PG_URL is unreachable: {exc}")
    return PG_URL
