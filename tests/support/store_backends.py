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


def worker_url(url: str) -> str:
    """`url` with a schema of this pytest-xdist worker's own first on the search path: the
    workers share one server, and each drops and recreates the tables of its own tests."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return url
    schema = "kernelscope_" + "".join(c for c in worker if c.isalnum())
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
    finally:
        engine.dispose()
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


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
        url = worker_url(PG_URL)
        reset_postgres(url)
    except Exception as exc:  # unreachable server
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL at KERNELSCOPE_TEST_PG_URL is unreachable: {exc}")
        pytest.skip(f"PostgreSQL at KERNELSCOPE_TEST_PG_URL is unreachable: {exc}")
    return url
