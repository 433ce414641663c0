"""Opening databases: default location, newer schemas, files that are not databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from kernelscope.daemon.engine.store import ExperimentStore, StoreError, resolve_db_url
from kernelscope.daemon.engine.store.migrations import SCHEMA_VERSION
from kernelscope.protocol.experiment import KernelExperiment


def test_url_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNELSCOPE_DB_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("KERNELSCOPE_CONFIG", raising=False)
    assert resolve_db_url() == f"sqlite:///{tmp_path}/data/kernelscope/experiments.sqlite"
    config = tmp_path / "config" / "kernelscope" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'db_url = "{tmp_path}/from-config.sqlite"\n')
    assert resolve_db_url() == f"sqlite:///{tmp_path}/from-config.sqlite"
    monkeypatch.setenv("KERNELSCOPE_DB_URL", "postgresql://u:p@127.0.0.1/db")
    assert resolve_db_url() == "postgresql+psycopg://u:p@127.0.0.1/db"
    assert resolve_db_url(str(tmp_path / "cli.sqlite")) == f"sqlite:///{tmp_path}/cli.sqlite"
    config.write_text("db_url = [")
    monkeypatch.delenv("KERNELSCOPE_DB_URL")
    with pytest.raises(StoreError, match="config"):
        resolve_db_url()


def test_default_location_is_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNELSCOPE_DB_URL", raising=False)
    monkeypatch.setenv("KERNELSCOPE_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    store = ExperimentStore()
    store.create_experiment(KernelExperiment(change_summary="x", score=1.0))
    assert (tmp_path / "xdg" / "kernelscope" / "experiments.sqlite").is_file()
    assert store.schema_version() == SCHEMA_VERSION


def test_newer_schema_is_refused(db_url: str) -> None:
    store = ExperimentStore(db_url)
    store.create_experiment(KernelExperiment(change_summary="x", score=1.0))
    store.close()
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE schema_version SET version = :v"), {"v": SCHEMA_VERSION + 1})
    engine.dispose()
    with pytest.raises(StoreError, match="newer"):
        ExperimentStore(db_url).list_experiments()


def test_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a SQLite database"):
        ExperimentStore(str(path)).list_experiments()
    assert path.read_bytes() == before


def test_other_applications_database_is_refused(db_url: str) -> None:
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE other_app (x INTEGER)"))
    engine.dispose()
    with pytest.raises(StoreError, match="not a kernelscope experiment store"):
        ExperimentStore(db_url).count()


def test_sqlite_settings(tmp_path: Path) -> None:
    store = ExperimentStore(str(tmp_path / "x.sqlite"))
    store.count()
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 60000
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
    assert sqlite3.connect(tmp_path / "x.sqlite").execute("PRAGMA integrity_check").fetchone() == ("ok",)
