"""The experiment store on SQLAlchemy 2 Core: SQLite by default, PostgreSQL with the same code.

Why not the seed's single JSON file: it is reloaded on every call (top-20 at 100k records
takes hundreds of milliseconds) and two writers racing can lose an update. Here every call is
one indexed query, and writes are transactions: on SQLite `BEGIN IMMEDIATE` in WAL mode with
a busy timeout (writers queue, readers never block), on PostgreSQL row locks. Engines are
per process id, so a store object survives `fork()` without sharing a connection.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import (
    Connection,
    Engine,
    and_,
    bindparam,
    create_engine,
    delete,
    event,
    exists,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError, OperationalError
from sqlalchemy.pool import NullPool

from kernelscope.daemon.engine import refuse_if_session_ended
from kernelscope.daemon.engine.store import kernel_stats as stats
from kernelscope.daemon.engine.store.config import is_default_url, resolve_db_url
from kernelscope.daemon.engine.store.errors import (
    DuplicateExperiment,
    ExperimentNotFound,
    InvalidExperiment,
    InvalidQuery,
    StoreError,
    StoreWriteFailed,
)
from kernelscope.daemon.engine.store.migrations import SCHEMA_VERSION, migrate, stored_version
from kernelscope.daemon.engine.store.recorded_workspace import recorded_workspace
from kernelscope.daemon.engine.store.schema import (
    experiment_kernels,
    experiments,
    kernel_stats,
    schema_version,
)
from kernelscope.daemon.engine.store.sqlite_setup import (
    connect_read_only,
    prepare_sqlite_file,
    sqlite_on_begin,
    sqlite_on_connect,
    sqlite_on_connect_read_only,
)
from kernelscope.protocol.experiment import (
    TOP_KEYS,
    FailureCategory,
    KernelExperiment,
    KernelSummary,
    Lineage,
    failure_category,
)

E = experiments.c
K = experiment_kernels.c

_EQUALITY_FILTERS = {
    "operator_sig": E.operator_sig,
    "dtype_sig": E.dtype_sig,
    "env": E.env,
    "base_commit": E.base_commit,
    "status": E.status,
    "workspace": E.workspace,
    "pid": E.pid,
    "memory_version": E.memory_version,
}
FILTER_NAMES = frozenset([*_EQUALITY_FILTERS, "is_buggy", "kernel", "min_score", "max_score", "text", "tag"])
_STATUSES = {"new", "running", "done", "failed", "timeout"}
_JSON_COLUMNS = {"kernels": "kernels_json", "metrics": "metrics_json", "tags": "tags_json"}
_ROW_COLUMNS = [c for c in experiments.c if c.name != "seq"]
_STATS_FIELDS = {"score", "is_buggy", "status", "created_at", "kernels", "workspace"}
_INSERT_EXPERIMENT = insert(experiments)
_INSERT_KERNELS = insert(experiment_kernels)


def _row_to_dict(row: Any) -> dict[str, Any]:
    data = dict(row._mapping)
    data.pop("seq", None)
    for field, column in _JSON_COLUMNS.items():
        data[field] = json.loads(data.pop(column))
    return data


def _experiment_to_row(exp: KernelExperiment) -> dict[str, Any]:
    data = exp.model_dump(mode="json")
    for field, column in _JSON_COLUMNS.items():
        data[column] = json.dumps(data.pop(field), ensure_ascii=False)
    return data


class ExperimentStore:
    """One experiment database. Cheap to create; opens lazily; safe across fork()."""

    def __init__(self, url: str | None = None, *, must_exist: bool = False, read_only: bool = False) -> None:
        """`must_exist`: refuse a SQLite file that is not there (a read through a mistyped
        --db must not create an empty store), except the per-user default, which a first read
        creates. `read_only`: never create, migrate or write (another user's store); a SQLite
        file this process may not write is opened read-only in any case."""
        self.url = resolve_db_url(url)
        try:
            self._backend = make_url(self.url).get_backend_name()
        except ArgumentError as exc:
            raise StoreError(f"invalid database URL {url or self.url!r}: {exc}") from None
        self.read_only = read_only
        self._must_exist = read_only or (must_exist and not is_default_url(self.url))
        self._engine_obj: Engine | None = None
        self._engine_pid: int | None = None
        self._raw_connection: sqlite3.Connection | None = None
        self._raw_pid: int | None = None
        self._raw_lock = threading.Lock()
        self._open_lock = threading.RLock()  # an engine made and its schema checked once
        self._schema_checked = False

    def __repr__(self) -> str:
        return f"ExperimentStore({make_url(self.url).render_as_string(hide_password=True)!r})"

    @property
    def is_sqlite(self) -> bool:
        return self._backend == "sqlite"

    # -- connections --------------------------------------------------------------------

    def _make_engine(self) -> Engine:
        if self.is_sqlite:
            database = make_url(self.url).database
            path = Path(database) if database and database != ":memory:" else None
            if path is not None:
                self.read_only |= prepare_sqlite_file(path, create=not self._must_exist)
            # Transactions are always closed by `_writing`/`_reading`, so the pool need not
            # roll back every connection it gets back (a measurable cost per insert).
            if self.read_only and path is not None:
                # a connection per read (NullPool): one that had to be immutable is not kept
                engine = create_engine(
                    "sqlite://", creator=functools.partial(connect_read_only, path), poolclass=NullPool
                )
            else:
                engine = create_engine(self.url, connect_args={"timeout": 60}, pool_reset_on_return=None)
            on_connect = sqlite_on_connect_read_only if self.read_only else sqlite_on_connect
            event.listen(engine, "connect", on_connect)
            event.listen(engine, "begin", sqlite_on_begin)
            return engine
        try:
            return create_engine(self.url, pool_pre_ping=True)
        except ModuleNotFoundError as exc:
            raise StoreError(
                f"no driver for {self._backend}: install kernelscope[postgres] ({exc.name} missing)"
            ) from None
        except (ArgumentError, NoSuchModuleError) as exc:
            raise StoreError(f"cannot use the database URL {self!r}: {exc}") from None

    @property
    def engine(self) -> Engine:
        """The engine, the database created or migrated first. The daemon's threads (a lens,
        the history build, a command) may open a new store at once: one creates, the others
        wait for it under the lock instead of reading tables not made yet."""
        engine = self._engine_obj
        if engine is not None and self._engine_pid == os.getpid() and self._schema_checked:
            return engine
        with self._open_lock:
            pid = os.getpid()
            if self._engine_obj is None or self._engine_pid != pid:
                if self._engine_obj is not None:
                    # Forked child: drop the parent's pooled connections without closing them.
                    self._engine_obj.dispose(close=False)
                self._engine_obj = self._make_engine()
                self._engine_pid = pid
            if not self._schema_checked:
                self._check_schema()
                self._schema_checked = True
            return self._engine_obj

    def close(self) -> None:
        if self._engine_obj is not None and self._engine_pid == os.getpid():
            self._engine_obj.dispose()
        self._engine_obj = None
        if self._raw_connection is not None and self._raw_pid == os.getpid():
            self._raw_connection.close()
        self._raw_connection = None

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Connection]:
        with self._translate_errors(), self.engine.connect() as conn:
            yield conn

    @contextlib.contextmanager
    def _writing(self) -> Iterator[Connection]:
        with self._translate_errors(), self.engine.connect() as conn:
            conn = conn.execution_options(kernelscope_write=True)
            with conn.begin():
                refuse_if_session_ended()  # (engine.for_session: the editor that asked has gone)
                yield conn

    @contextlib.contextmanager
    def _translate_errors(self) -> Iterator[None]:
        try:
            yield
        except (DBAPIError, OperationalError) as exc:
            message = str(exc.orig) if getattr(exc, "orig", None) is not None else str(exc)
            if "file is not a database" in message or "not a database" in message:
                raise StoreError(f"{self._where()} is not a SQLite database ({message})") from None
            if isinstance(exc, IntegrityError):
                raise
            raise self._store_error(message) from None

    def _store_error(self, message: str) -> StoreError:
        """A driver's error message as the StoreError a person can act on."""
        lowered = message.lower()
        if "readonly database" in lowered:
            return StoreWriteFailed(f"cannot write to {self._where()}: it is read-only ({message})")
        if "disk is full" in lowered or "no space left" in lowered or "could not extend file" in lowered:
            return StoreWriteFailed(
                f"could not write to {self._where()}: no space left on the device (disk full); "
                f"the transaction was rolled back and nothing was recorded ({message})"
            )
        if "disk i/o error" in lowered:  # SQLite's word for EFBIG, EIO and some ENOSPC
            return StoreWriteFailed(
                f"could not write to {self._where()}: disk I/O error (a full disk, a file size "
                "limit or a failing device); the transaction was rolled back and nothing was recorded"
            )
        return StoreError(f"database error on {self._where()}: {message}")

    def _where(self) -> str:
        url = make_url(self.url)
        return (url.database or ":memory:") if self.is_sqlite else url.render_as_string(hide_password=True)

    # -- schema -----------------------------------------------------------------------

    def _check_schema(self) -> None:
        """Read the schema version in a plain read transaction (readers never wait behind a
        writer); take the write lock only when the database must be created or migrated."""
        assert self._engine_obj is not None
        with self._translate_errors(), self._engine_obj.connect() as conn:
            with conn.begin():
                current = stored_version(conn, self._where())
            if current == SCHEMA_VERSION:
                return
            if self.read_only:
                raise StoreError(
                    f"{self._where()} is opened read-only but needs its schema migrated from version "
                    f"{current} to {SCHEMA_VERSION}: open it once where it can be written"
                )
            conn = conn.execution_options(kernelscope_write=True)
            with conn.begin():
                migrate(conn, self._where(), self.is_sqlite)

    def schema_version(self) -> int:
        with self._reading() as conn:
            return int(conn.execute(select(schema_version.c.version)).scalar_one())

    def integrity_check(self) -> list[str]:
        """Problems found by the database's own check ([] when healthy)."""
        with self._reading() as conn:
            if self.is_sqlite:
                rows = [r[0] for r in conn.exec_driver_sql("PRAGMA integrity_check").fetchall()]
                problems = [r for r in rows if r != "ok"]
            else:
                conn.execute(text("SELECT 1"))
                problems = []
            orphans = conn.execute(
                select(func.count())
                .select_from(experiment_kernels)
                .where(~exists().where(E.seq == K.exp_seq))
            ).scalar_one()
        if orphans:
            problems.append(f"{orphans} kernel rows point to no experiment")
        return problems

    # -- writes ---------------------------------------------------------------------------

    def create_experiment(self, exp: KernelExperiment | dict[str, Any]) -> KernelExperiment:
        """Store a new experiment. A duplicate id raises DuplicateExperiment (a ValueError)."""
        record = self._validated(exp)
        if self.is_sqlite:
            with self._raw_sqlite_transaction() as cursor:
                _sqlite_insert(cursor, record)
            return record
        with self._writing() as conn:
            self._insert(conn, record)
        return record

    def _insert(self, conn: Connection, record: KernelExperiment) -> None:
        if self.is_sqlite:
            driver = conn.connection.driver_connection
            assert driver is not None  # a checked-out connection holds its DBAPI connection
            cursor = driver.cursor()
            try:
                _sqlite_insert(cursor, record)
            finally:
                cursor.close()
            return
        try:
            with conn.begin_nested() if not self.is_sqlite else contextlib.nullcontext():
                # Values as parameters, not embedded in the statement: the compiled
                # statement is then cached, which triples the insert rate.
                key = conn.execute(_INSERT_EXPERIMENT, _experiment_to_row(record)).inserted_primary_key
                assert key is not None  # a single-row INSERT reports its primary key
                seq = key[0]
        except IntegrityError:
            raise DuplicateExperiment(f"experiment with id '{record.id}' already exists") from None
        self._insert_kernels(conn, seq, record)

    @contextlib.contextmanager
    def _raw_sqlite_transaction(self) -> Iterator[sqlite3.Cursor]:
        """A write transaction on a plain sqlite3 connection kept per process.

        `create_experiment` is the store's hot write (every iteration, every benchmark
        probe); going through the driver directly instead of SQLAlchemy's connection and
        transaction layers roughly doubles the rate of durable single-record commits. The
        connection has the same pragmas as the engine's, and BEGIN IMMEDIATE takes the write
        lock up front exactly as `_writing` does.
        """
        self.engine  # noqa: B018 - opens and migrates the database on first use
        if self.read_only:
            raise self._store_error("attempt to write a readonly database")
        pid = os.getpid()
        with self._raw_lock:
            if self._raw_connection is None or self._raw_pid != pid:
                database = make_url(self.url).database or ":memory:"
                connection = sqlite3.connect(database, timeout=60, check_same_thread=False)
                sqlite_on_connect(connection, None)
                self._raw_connection, self._raw_pid = connection, pid
            connection = self._raw_connection
            cursor = connection.cursor()
            try:
                try:
                    cursor.execute("BEGIN IMMEDIATE")
                except sqlite3.DatabaseError as exc:
                    raise self._store_error(str(exc)) from None
                try:
                    refuse_if_session_ended()  # (the write lock taken: the editor that asked may have gone)
                    yield cursor
                    cursor.execute("COMMIT")
                except BaseException as exc:
                    with contextlib.suppress(sqlite3.Error):
                        cursor.execute("ROLLBACK")
                    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.IntegrityError):
                        raise self._store_error(str(exc)) from None
                    raise
            finally:
                cursor.close()

    @staticmethod
    def _insert_kernels(conn: Connection, seq: int, record: KernelExperiment, fold: bool = True) -> None:
        kernels = list(dict.fromkeys(record.kernels))
        if kernels:
            conn.execute(
                _INSERT_KERNELS,
                [{"exp_seq": seq, "workspace": record.workspace, "kernel": k} for k in kernels],
            )
            if fold:
                stats.record_insert(conn, seq, record.model_dump(), kernels)

    def update_experiment(self, exp_id: str, **fields: Any) -> KernelExperiment:
        """Change fields of a stored experiment; validated first, nothing written on error; a
        new workspace checked (recorded_workspace.py) once the id is known to exist."""
        if "id" in fields and fields["id"] != exp_id:
            raise InvalidExperiment("the id of an experiment cannot be changed")
        unknown = sorted(set(fields) - set(KernelExperiment.model_fields))
        if unknown:
            raise InvalidExperiment(f"unknown field(s) {', '.join(unknown)}")
        with self._writing() as conn:
            row = conn.execute(select(experiments).where(E.id == exp_id).with_for_update()).first()
            if row is None:
                raise ExperimentNotFound(f"experiment with id '{exp_id}' not found")
            merged = {**_row_to_dict(row), **fields}
            if (new := fields.get("workspace")) and new != row.workspace:  # (an empty one clears it)
                merged["workspace"] = recorded_workspace(str(new), f"nothing changed in {exp_id}")
            record = self._validated(merged)
            values = _experiment_to_row(record)
            values.pop("id")
            conn.execute(update(experiments).where(E.seq == row.seq).values(**values))
            pairs = stats.affected_pairs(conn, [row.seq])
            if {"kernels", "workspace"} & set(fields):
                conn.execute(delete(experiment_kernels).where(K.exp_seq == row.seq))
                self._insert_kernels(conn, row.seq, record, fold=False)
            if _STATS_FIELDS & set(fields):
                stats.recompute(conn, pairs | stats.affected_pairs(conn, [row.seq]))
        return record

    def delete_experiment(self, exp_id: str) -> None:
        """Remove an experiment (the seed's API has it; the CLI does not expose it)."""
        with self._writing() as conn:
            seq = conn.execute(select(E.seq).where(E.id == exp_id)).scalar()
            if seq is None:
                raise ExperimentNotFound(f"experiment with id '{exp_id}' not found")
            pairs = stats.affected_pairs(conn, [seq])
            conn.execute(delete(experiment_kernels).where(K.exp_seq == seq))
            conn.execute(delete(experiments).where(E.seq == seq))
            stats.recompute(conn, pairs)

    def import_experiments(
        self, records: Iterable[KernelExperiment], replace: bool = False, batch_size: int = 500
    ) -> dict[str, int]:
        """Insert many records in one transaction; existing ids are skipped (or replaced).

        Batched (one existence query and one multi-row insert per batch) so importing a
        large seed database takes seconds, not minutes.
        """
        counts = {"inserted": 0, "skipped": 0, "replaced": 0}
        batch: list[KernelExperiment] = []
        touched: set[tuple[str, str]] = set()
        with self._writing() as conn:
            for record in records:
                batch.append(record)
                if len(batch) >= batch_size:
                    touched |= self._import_batch(conn, batch, replace, counts)
                    batch = []
            if batch:
                touched |= self._import_batch(conn, batch, replace, counts)
            stats.recompute(conn, touched)
        if self.is_sqlite and counts["inserted"] + counts["replaced"] > 1000:
            # A bulk import leaves its pages in the WAL; fold them into the database now
            # rather than charging the next small commit with a large checkpoint.
            with self._reading() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        return counts

    def _import_batch(
        self, conn: Connection, batch: list[KernelExperiment], replace: bool, counts: dict[str, int]
    ) -> set[tuple[str, str]]:
        """Insert one batch; returns the (workspace, kernel) pairs whose digest must be rebuilt."""
        unique = list({record.id: record for record in batch}.values())
        counts["skipped"] += len(batch) - len(unique)
        existing = dict(conn.execute(select(E.id, E.seq).where(E.id.in_([r.id for r in unique]))).all())
        touched: set[tuple[str, str]] = set()
        if existing and replace:
            seqs = list(existing.values())
            touched |= stats.affected_pairs(conn, seqs)
            conn.execute(delete(experiment_kernels).where(K.exp_seq.in_(seqs)))
            conn.execute(delete(experiments).where(E.seq.in_(seqs)))
            counts["replaced"] += len(existing)
        elif existing:
            counts["skipped"] += len(existing)
            unique = [r for r in unique if r.id not in existing]
        counts["inserted"] += len([r for r in unique if r.id not in existing])
        if not unique:
            return touched
        inserted = conn.execute(
            insert(experiments).returning(E.seq, E.id, sort_by_parameter_order=True),
            [_experiment_to_row(r) for r in unique],
        ).all()
        kernel_rows = [
            {"exp_seq": seq, "workspace": record.workspace, "kernel": kernel}
            for (seq, _), record in zip(inserted, unique, strict=True)
            for kernel in dict.fromkeys(record.kernels)
        ]
        if kernel_rows:
            conn.execute(insert(experiment_kernels), kernel_rows)
        touched |= {(row["workspace"], row["kernel"]) for row in kernel_rows}
        return touched

    @staticmethod
    def _validated(data: KernelExperiment | dict[str, Any]) -> KernelExperiment:
        try:
            if isinstance(data, KernelExperiment):
                # Already validated at construction and on every assignment
                # (validate_assignment), so it is stored as it is.
                return data
            return KernelExperiment.model_validate(data)
        except ValidationError as exc:
            details = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg']}" for err in exc.errors()
            )
            raise InvalidExperiment(f"invalid experiment: {details}") from None

    # -- reads ------------------------------------------------------------------------

    def get_experiment(self, exp_id: str) -> KernelExperiment | None:
        with self._reading() as conn:
            row = conn.execute(_GET_QUERY, {"exp_id": exp_id}).first()
        return None if row is None else KernelExperiment.model_validate(_row_to_dict(row))

    def require(self, exp_id: str) -> KernelExperiment:
        found = self.get_experiment(exp_id)
        if found is None:
            raise ExperimentNotFound(f"experiment with id '{exp_id}' not found")
        return found

    def _conditions(self, filters: dict[str, Any]) -> list[Any]:
        unknown = sorted(set(filters) - FILTER_NAMES)
        if unknown:
            raise InvalidQuery(
                f"unknown filter(s) {', '.join(unknown)}; known: {', '.join(sorted(FILTER_NAMES))}"
            )
        conditions: list[Any] = []
        for name, value in filters.items():
            if value is None:
                continue
            if name in _EQUALITY_FILTERS:
                if not isinstance(value, str):
                    raise InvalidQuery(f"filter {name} must be a string, got {type(value).__name__}")
                if name == "status" and value not in _STATUSES:
                    raise InvalidQuery(f"status must be one of {sorted(_STATUSES)}, got {value!r}")
                conditions.append(_EQUALITY_FILTERS[name] == value)
            elif name == "is_buggy":
                if not isinstance(value, bool):
                    raise InvalidQuery("filter is_buggy must be true or false")
                conditions.append(E.is_buggy == value)
            elif name in ("min_score", "max_score"):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    raise InvalidQuery(f"filter {name} must be a finite number, got {value!r}")
                conditions.append(E.score >= value if name == "min_score" else E.score <= value)
            elif name == "kernel":
                if not isinstance(value, str):
                    raise InvalidQuery("filter kernel must be a string")
                conditions.append(exists().where(and_(K.exp_seq == E.seq, K.kernel == value)))
            elif name in ("text", "tag"):
                if not isinstance(value, str):
                    raise InvalidQuery(f"filter {name} must be a string")
                if name == "tag":
                    conditions.append(E.tags_json.contains(json.dumps(value), autoescape=True))
                else:
                    needle = value.lower()
                    conditions.append(
                        or_(
                            func.lower(E.change_summary).contains(needle, autoescape=True),
                            func.lower(E.detailed_description).contains(needle, autoescape=True),
                        )
                    )
        return conditions

    def list_experiments(
        self, limit: int | None = None, offset: int = 0, hidden_versions: stats.Hidden = (), **filters: Any
    ) -> list[KernelExperiment]:
        """Experiments matching all filters, oldest first (the order they were recorded);
        `hidden_versions`: memory versions to leave out (masked ones: workspace/masked.py)."""
        conditions = [*self._conditions(filters), *stats.not_versions(hidden_versions)]
        query = select(*_ROW_COLUMNS).where(*conditions).order_by(E.seq)
        if limit is not None:
            query = query.limit(max(0, int(limit)))
        if offset:
            query = query.offset(max(0, int(offset)))
        with self._reading() as conn:
            rows = conn.execute(query).fetchall()
        return [KernelExperiment.model_validate(_row_to_dict(r)) for r in rows]

    def count(self, hidden_versions: stats.Hidden = (), **filters: Any) -> int:
        conditions = [*self._conditions(filters), *stats.not_versions(hidden_versions)]
        with self._reading() as conn:
            return int(
                conn.execute(select(func.count()).select_from(experiments).where(*conditions)).scalar_one()
            )

    def _top_query(
        self,
        max_results: int,
        include_buggy: bool,
        filters: dict[str, Any],
        columns: Any,
        include_interpreter: bool = False,
        hidden_versions: stats.Hidden = (),
    ):
        plain = not (filters or include_buggy or include_interpreter or hidden_versions)
        if plain and columns is _TOP_COLUMNS:
            return _TOP_QUERY.params(limit=max(0, int(max_results)))
        conditions = [*self._conditions(filters), *stats.not_versions(hidden_versions)]
        if not include_buggy and "is_buggy" not in filters:
            conditions.append(E.is_buggy == False)  # noqa: E712 - SQL expression
        if not include_interpreter:
            conditions.append(_COMPARABLE)
        conditions.append(E.score.is_not(None))
        return (
            select(*columns)
            .where(*conditions)
            .order_by(E.score.desc(), E.seq.desc())
            .limit(max(0, int(max_results)))
        )

    def top(
        self,
        max_results: int = 20,
        include_buggy: bool = False,
        include_interpreter: bool = False,
        hidden_versions: stats.Hidden = (),
        **filters: Any,
    ) -> list[KernelExperiment]:
        """Highest-scoring experiments as full records (buggy runs excluded by default, and
        interpreter runs: their timings are no GPU figures, so their scores never rank;
        `hidden_versions` left out, a workspace's masked ones: workspace/masked.py)."""
        query = self._top_query(
            max_results, include_buggy, filters, _ROW_COLUMNS, include_interpreter, hidden_versions
        )
        with self._reading() as conn:
            rows = conn.execute(query).fetchall()
        return [KernelExperiment.model_validate(_row_to_dict(r)) for r in rows]

    def top_count(
        self,
        include_buggy: bool = False,
        include_interpreter: bool = False,
        hidden_versions: stats.Hidden = (),
        **filters: Any,
    ) -> int:
        """How many experiments `top` ranks with these arguments, with no limit."""
        query = self._top_query(
            0, include_buggy, filters, [func.count()], include_interpreter, hidden_versions
        )
        with self._reading() as conn:
            return int(conn.execute(query.order_by(None).limit(None)).scalar_one())

    def top_experiments(
        self,
        max_results: int = 20,
        include_buggy: bool = False,
        include_interpreter: bool = False,
        hidden_versions: stats.Hidden = (),
        **filters: Any,
    ) -> list[dict[str, Any]]:
        """The seed's top_experiments: dicts of the key fields, best score first."""
        query = self._top_query(
            max_results, include_buggy, filters, _TOP_COLUMNS, include_interpreter, hidden_versions
        )
        with self._reading() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    def workspace_versions(self, **filters: Any) -> dict[str, set[str]]:
        """The memory versions the experiments matching `filters` name, by workspace."""
        query = select(E.workspace, E.memory_version).where(
            *self._conditions(filters), E.memory_version.is_not(None)
        )
        found: dict[str, set[str]] = {}
        with self._reading() as conn:
            for workspace, version in conn.execute(query.distinct()):
                found.setdefault(workspace, set()).add(version)
        return found

    def lineage(self, exp_id: str) -> Lineage:
        """Ancestors through `pid` (parent first) and descendants (breadth first)."""
        experiment = self.require(exp_id)
        ancestors: list[KernelExperiment] = []
        seen = {experiment.id}
        missing: str | None = None
        parent_id = experiment.pid
        while parent_id and parent_id not in seen:
            parent = self.get_experiment(parent_id)
            if parent is None:
                missing = parent_id
                break
            ancestors.append(parent)
            seen.add(parent.id)
            parent_id = parent.pid
        descendants: list[KernelExperiment] = []
        frontier = [experiment.id]
        visited = {experiment.id}
        while frontier:
            with self._reading() as conn:
                rows = conn.execute(
                    select(*_ROW_COLUMNS).where(E.pid.in_(frontier)).order_by(E.seq)
                ).fetchall()
            children = [KernelExperiment.model_validate(_row_to_dict(r)) for r in rows]
            children = [c for c in children if c.id not in visited]
            visited.update(c.id for c in children)
            descendants.extend(children)
            frontier = [c.id for c in children]
        return Lineage(
            experiment=experiment, ancestors=ancestors, descendants=descendants, missing_parent=missing
        )

    def failures(
        self, include_interpreter: bool = False, hidden_versions: stats.Hidden = (), **filters: Any
    ) -> dict[FailureCategory, list[KernelExperiment]]:
        """Experiments grouped by the seed's categories (improvements left out). Interpreter
        runs are left out unless `include_interpreter`: a CPU timing is no regression;
        `hidden_versions` as in list_experiments."""
        groups: dict[FailureCategory, list[KernelExperiment]] = {
            "buggy": [],
            "regressive": [],
            "slight_regression": [],
            "marginal": [],
        }
        for exp in self.list_experiments(hidden_versions=hidden_versions, **filters):
            if not include_interpreter and is_interpreter_run(exp):
                continue
            category = failure_category(exp.score, exp.is_buggy)
            if category in groups:
                groups[category].append(exp)
        return groups

    def kernel_summaries(self, workspace: str, hidden_versions: Iterable[str] = ()) -> list[KernelSummary]:
        """Per kernel of a workspace: best, latest, runs and failures (`hidden_versions` left
        out, as in list_experiments: recomputed from the history then, their runs counted in
        `masked_runs`). The surfaces read it through daemon/engine/workspace/masked.py.

        Code lenses call this on every refresh, so it reads the `kernel_stats` digest that
        writes keep current (a primary-key range scan plus two row lookups per kernel),
        with a statement built once.
        """
        with self._reading() as conn:
            if hidden_versions:
                found = stats.summaries_without(conn, workspace, hidden_versions)
                return [KernelSummary.model_construct(**row) for row in found]
            rows = conn.execute(_SUMMARY_QUERY, {"workspace": workspace}).all()
        # Rows come from the store's own columns, already validated on write: construct
        # without re-validating.
        return [KernelSummary.model_construct(**dict(row._mapping)) for row in rows]

    def kernel_stats_mismatches(self) -> list[str]:
        """Where the digest disagrees with a recomputation from history ([] when consistent)."""
        with self._reading() as conn:
            stored = {(r.workspace, r.kernel): dict(r._mapping) for r in conn.execute(select(kernel_stats))}
            fresh = {pair: stats.compute_digest(conn, *pair) for pair in stats.all_pairs(conn)}
        return [
            f"{key}: stored {stored.get(key)} != recomputed {fresh.get(key)}"
            for key in sorted(set(stored) | set(fresh))
            if stored.get(key) != fresh.get(key)
        ]


def is_interpreter_run(exp: KernelExperiment) -> bool:
    """A run of the Triton interpreter (metrics.mode): CPU timings, never ranked or called a
    regression; `_COMPARABLE` below is the same rule in SQL."""
    return exp.metrics.get("mode") == "interpreter"


# Hot statements are built once: building a SELECT with aliases costs more than running it.
_SUMMARY_QUERY = stats.summary_query()
_GET_QUERY = select(*_ROW_COLUMNS).where(E.id == bindparam("exp_id"))
_TOP_COLUMNS = [getattr(E, key) for key in TOP_KEYS]
# Not a run of the Triton interpreter (metrics.mode, as every writer serializes it): its
# timings are CPU figures, recorded but never ranked against GPU runs.
_COMPARABLE = ~E.metrics_json.contains('"mode": "interpreter"', autoescape=True)
_TOP_QUERY = (
    select(*_TOP_COLUMNS)
    .where(E.is_buggy == False, E.score.is_not(None), _COMPARABLE)  # noqa: E712 - SQL expression
    .order_by(E.score.desc(), E.seq.desc())
    .limit(bindparam("limit"))
)


def _sqlite_insert(cursor: sqlite3.Cursor, record: KernelExperiment) -> None:
    """Insert one experiment with its kernel rows and digest, on a driver cursor that is
    inside a write transaction."""
    row = _experiment_to_row(record)
    try:
        cursor.execute(_sqlite_insert_sql(tuple(row)), row)
    except sqlite3.IntegrityError:
        raise DuplicateExperiment(f"experiment with id '{record.id}' already exists") from None
    seq = cursor.lastrowid
    kernels = list(dict.fromkeys(record.kernels))
    if not kernels:
        return
    cursor.executemany(
        "INSERT INTO experiment_kernels (exp_seq, workspace, kernel) VALUES (?, ?, ?)",
        [(seq, record.workspace, kernel) for kernel in kernels],
    )
    sql, order = _sqlite_stats_upsert()
    usable = not record.is_buggy and record.score is not None
    values = {
        "workspace": record.workspace,
        "runs": 1,
        "failures": int(stats.is_failure(record.is_buggy, record.status)),
        "best_seq": seq if usable else None,
        "best_score": record.score if usable else None,
        "latest_seq": seq,
        "latest_created": record.created_at,
    }
    cursor.executemany(sql, [tuple({**values, "kernel": k}[name] for name in order) for k in kernels])


@functools.cache
def _sqlite_insert_sql(columns: tuple[str, ...]) -> str:
    names = ", ".join(columns)
    params = ", ".join(f":{c}" for c in columns)
    return f"INSERT INTO experiments ({names}) VALUES ({params})"


@functools.cache
def _sqlite_stats_upsert() -> tuple[str, tuple[str, ...]]:
    """The kernel_stats upsert compiled once for SQLite, with its parameter order."""
    from sqlalchemy.dialects import sqlite as sqlite_dialect

    compiled = stats.upsert_statement("sqlite").compile(dialect=sqlite_dialect.dialect())
    return str(compiled), tuple(compiled.positiontup or ())
