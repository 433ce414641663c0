"""Opening a store touches nothing it should not: reads never wait behind a writer, a file this
process may not write is read read-only, another application's database is refused before
anything is written, a mistyped location is refused instead of created, other stores named in
memory records are only read, and a relative `db_url` in the config file is the config's."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kernelscope.daemon.engine.store import ExperimentStore, StoreError, resolve_db_url
from kernelscope.daemon.engine.store.adopt import elsewhere
from kernelscope.protocol.experiment import KernelExperiment

KERNELSCOPE = str(Path(sys.executable).with_name("kernelscope"))


def _tables(path: Path) -> list[str]:
    connection = sqlite3.connect(path)
    try:
        return sorted(r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'"))
    finally:
        connection.close()


def _stored(path: Path) -> None:
    store = ExperimentStore(str(path))
    store.create_experiment(KernelExperiment(change_summary="x", score=1.1, workspace="/ws"))
    store.close()


def test_a_reader_does_not_wait_behind_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "rb.sqlite"
    _stored(path)
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")
    released, guard = threading.Event(), threading.Lock()

    def commit() -> None:
        with guard:
            if not released.is_set():
                released.set()
                writer.execute("COMMIT")

    safety = threading.Timer(60.0, commit)  # a reader that waits for the writer ends here
    safety.start()
    try:
        assert len(ExperimentStore(str(path)).list_experiments()) == 1
        assert not released.is_set(), "the read waited until the writer let go"  # no clock
    finally:
        safety.cancel()
        commit()
        writer.close()


def test_a_fresh_store_read_from_two_threads_at_once_is_created_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's first lens and the history build (or a topExperiments click) may open a new
    store from two threads at once: the second read must wait for the schema the first is
    creating, not fail with "no such table" (it did: the schema was marked checked before it
    was created). The creation holds until the second reader has tried, or 5 s."""
    import kernelscope.daemon.engine.store.store as store_module

    creating, tried = threading.Event(), threading.Event()
    real_migrate = store_module.migrate

    def slow_migrate(*args: object) -> None:
        creating.set()
        tried.wait(5.0)  # a second reader that is not kept out reads an empty database now
        real_migrate(*args)

    monkeypatch.setattr(store_module, "migrate", slow_migrate)
    store = ExperimentStore(str(tmp_path / "fresh.sqlite"))
    outcomes: list[object] = []

    def second() -> None:
        try:
            outcomes.append(store.kernel_summaries("/ws"))
        except StoreError as exc:
            outcomes.append(exc)
        finally:
            tried.set()

    first = threading.Thread(target=lambda: outcomes.append(store.top(5)))
    first.start()
    assert creating.wait(30)
    reader = threading.Thread(target=second)
    reader.start()
    first.join(30)
    reader.join(30)
    assert outcomes == [[], []], outcomes


def _read_where_nothing_can_be_written(path: Path, folder: Path) -> None:
    """The store at `path` (holding `_stored`'s one experiment) made immutable with its folder:
    it is read, and a write says read-only."""
    if subprocess.run(["chattr", "+i", str(path), str(folder)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        store = ExperimentStore(str(path))
        assert [e.change_summary for e in store.list_experiments()] == ["x"]
        with pytest.raises(StoreError, match="read-only"):
            store.create_experiment(KernelExperiment(change_summary="y"))
    finally:
        subprocess.run(["chattr", "-i", str(path), str(folder)], check=True)


def test_a_file_that_cannot_be_written_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "x.sqlite"
    _stored(path)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.execute("PRAGMA journal_mode=DELETE")
    connection.close()
    _read_where_nothing_can_be_written(path, folder)


def test_a_wal_store_in_a_folder_that_cannot_be_written_is_read(tmp_path: Path) -> None:
    """Every store kernelscope writes is in WAL mode, which SQLite reads through a `-shm` file
    it creates beside the database: in a folder this process may not write (a read-only mount,
    a teammate's home) every read failed with "unable to open database file". (The test above
    turns WAL off first, so it never met this.)"""
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "x.sqlite"
    _stored(path)  # closed: its WAL is checkpointed into the file and removed
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()  # the last connection: SQLite removes -wal and -shm
    assert not path.with_name("x.sqlite-shm").exists()
    _read_where_nothing_can_be_written(path, folder)


_TEAMMATE_READER = """
import sys
from kernelscope.daemon.engine.store import ExperimentStore, StoreError
store = ExperimentStore(sys.argv[1])  # one store object for every read, as the daemon keeps it
for _ in sys.stdin:
    try:
        print(sorted(e.change_summary for e in store.list_experiments()), flush=True)
    except StoreError as exc:
        print(f"StoreError: {exc}", flush=True)
"""


@contextlib.contextmanager
def _as_a_teammate(path: Path) -> Iterator[Callable[[], str]]:
    """A long-lived reader of `path` run as another user (nobody), who may read the store
    and its folder but write neither: each call is one read, answered as a line."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("reading as another user needs root and setpriv")
    command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(path.parent)}
    reader = subprocess.Popen(
        [*command, sys.executable, "-c", _TEAMMATE_READER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert reader.stdin is not None and reader.stdout is not None
    stdin, stdout = reader.stdin, reader.stdout

    def read() -> str:
        stdin.write("read\n")
        stdin.flush()
        return stdout.readline().strip()

    try:
        yield read
    finally:
        stdin.close()
        reader.wait(timeout=60)


def test_a_teammates_store_is_read_as_it_is_now_or_refused(tmp_path: Path) -> None:
    """A teammate's WAL store in their folder, which this user may not write (SQLite says
    SQLITE_READONLY_DIRECTORY there, not the "unable to open" a chattr'd folder gives root):
    every read failed with "cannot write ... read-only". Now it is read; what the teammate
    commits later is seen by the same store object (an immutable connection kept in a pool
    would show the old rows for good); and a copy whose last commits are only in its `-wal`
    (no `-shm` to read them through) is refused by name, never shown without them."""
    with tempfile.TemporaryDirectory(prefix="kernelscope-team-") as top:
        team = Path(top)
        team.chmod(0o755)  # (pytest's own folder is the owner's alone)
        path = team / "home" / "x.sqlite"
        path.parent.mkdir()
        _stored(path)  # closed: one file, no -wal, no -shm
        owner = ExperimentStore(str(path))
        with _as_a_teammate(path) as read:
            assert read() == "['x']"
            owner.create_experiment(KernelExperiment(change_summary="y", workspace="/ws"))  # kept open
            assert read() == "['x', 'y']"
        copy = team / "copy"
        copy.mkdir()
        for name in ("x.sqlite", "x.sqlite-wal"):  # 'y' is in the -wal alone
            shutil.copy2(path.with_name(name), copy / name)
        owner.close()
        with _as_a_teammate(copy / "x.sqlite") as read:
            refused = read()
        assert refused.startswith("StoreError:") and "x.sqlite-wal" in refused, refused


def test_another_applications_experiments_table_is_refused_before_any_write(tmp_path: Path) -> None:
    path = tmp_path / "foreign.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE experiments (id INTEGER PRIMARY KEY, name TEXT, lr REAL)")
    connection.commit()
    connection.close()
    with pytest.raises(StoreError, match="not a kernelscope experiment store"):
        ExperimentStore(str(path)).list_experiments()
    assert _tables(path) == ["experiments"]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("foo://bar", "unsupported database URL"),
        ("mysql://u:p@h/db", "SQLite .* or PostgreSQL"),
        ("http://x", "unsupported database URL"),
        ("sqlite://rel.db", "three slashes"),
        ("   ", "empty database URL"),
    ],
)
def test_unusable_urls_are_store_errors(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        ExperimentStore(url).count()


def test_tilde_is_expanded_in_sqlite_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert resolve_db_url("sqlite:///~/x.db") == f"sqlite:///{tmp_path}/x.db"
    assert resolve_db_url("~/x.db") == f"sqlite:///{tmp_path}/x.db"


def test_a_read_through_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "experimnets.sqlite"
    with pytest.raises(StoreError, match="no experiment store at"):
        ExperimentStore(str(missing), must_exist=True).list_experiments()
    assert not missing.parent.exists()
    below_a_file = tmp_path / "file"
    below_a_file.write_text("")
    with pytest.raises(StoreError, match="cannot create the experiment store"):
        ExperimentStore(str(below_a_file / "x.sqlite")).count()


def test_cli_reads_refuse_a_mistyped_db_with_one_json_error(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("KERNELSCOPE_DB_URL", None)
    for db in ("experimnets.sqlite", "foo://bar", "sqlite://rel.db"):
        done = subprocess.run(
            [KERNELSCOPE, "exp", "list", "--db", db, "--json"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
        assert done.returncode == 2, (db, done.stdout, done.stderr)
        assert json.loads(done.stdout)["error"]["kind"] == "store"
        assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_stores_named_in_records_are_only_read(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    below_a_file = tmp_path / "file"
    below_a_file.write_text("")
    other = tmp_path / "other.sqlite"
    store = ExperimentStore(str(other))
    store.create_experiment(KernelExperiment(change_summary="theirs", workspace=str(root)))
    store.close()
    records: list[dict[str, object]] = [
        {"kernelscope": {"store": f"sqlite:///{tmp_path}/alice/.local/share/experiments.sqlite"}},
        {"kernelscope": {"store": f"sqlite:///{root}/memory/team.sqlite"}},
        {"kernelscope": {"store": f"sqlite:///{below_a_file}/x.sqlite"}},
        {"kernelscope": {"store": "mysql://u@h/db"}},
        {"kernelscope": {"store": f"sqlite:///{other}"}},
    ]
    current = ExperimentStore(str(tmp_path / "mine.sqlite"))
    assert elsewhere(root, records, current) == {f"sqlite:///{other}": 1}
    assert not (tmp_path / "alice").exists()
    assert sorted(p.name for p in (root / "memory").iterdir()) == []


def test_a_relative_db_url_in_the_config_is_the_config_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config" / "kernelscope" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('db_url = "team/exps.sqlite"\n')
    monkeypatch.delenv("KERNELSCOPE_DB_URL", raising=False)
    monkeypatch.setenv("KERNELSCOPE_CONFIG", str(config))
    elsewhere_dir = tmp_path / "somewhere"
    elsewhere_dir.mkdir()
    monkeypatch.chdir(elsewhere_dir)
    assert resolve_db_url() == f"sqlite:///{config.parent}/team/exps.sqlite"
    monkeypatch.setenv("KERNELSCOPE_DB_URL", "rel.sqlite")  # the environment's stays the cwd's
    assert resolve_db_url() == f"sqlite:///{elsewhere_dir}/rel.sqlite"


def test_shim_names_the_store_by_its_absolute_url(tmp_path: Path) -> None:
    done = subprocess.run(
        [KERNELSCOPE, "exp", "shim", "skill", "--db", "team.sqlite"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    shim = (tmp_path / "skill" / "kernel_exp_dataclass.py").read_text()
    assert f"_expdb.use_database('sqlite:///{tmp_path}/team.sqlite')" in shim


def test_demo_refuses_an_unknown_mode_before_recording(tmp_path: Path) -> None:
    env = {**os.environ, "KERNELSCOPE_DB_URL": str(tmp_path / "demo.sqlite")}
    done = subprocess.run(
        [KERNELSCOPE, "demo", "--dir", str(tmp_path / "demo"), "--mode", "bogus"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1 and "--mode" in done.stderr, (done.stdout, done.stderr)
    assert not (tmp_path / "demo").exists() and not (tmp_path / "demo.sqlite").exists()


def test_interpreter_runs_are_kept_but_never_ranked(tmp_path: Path) -> None:
    store = ExperimentStore(str(tmp_path / "interp.sqlite"))
    gpu = store.create_experiment(KernelExperiment(change_summary="gpu", score=1.25, metrics={"mode": "gpu"}))
    cpu_fast = store.create_experiment(
        KernelExperiment(change_summary="cpu", score=3.0, metrics={"mode": "interpreter"})
    )
    cpu_slow = store.create_experiment(
        KernelExperiment(change_summary="cpu slow", score=0.001, metrics={"mode": "interpreter"})
    )
    assert [e.id for e in store.top()] == [gpu.id]
    assert [e["id"] for e in store.top_experiments()] == [gpu.id]
    assert [e.id for e in store.top(include_interpreter=True)] == [cpu_fast.id, gpu.id, cpu_slow.id]
    assert store.failures()["regressive"] == []
    assert [e.id for e in store.failures(include_interpreter=True)["regressive"]] == [cpu_slow.id]
    assert len(store.list_experiments()) == 3  # recorded all the same
    store.close()
    shown = subprocess.run(
        [KERNELSCOPE, "exp", "top", "--db", str(tmp_path / "interp.sqlite")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    # a CPU machine's first `exp top` (every run an interpreter run) says why its table is short
    assert shown.returncode == 0 and "2 interpreter runs left out" in shown.stdout, shown


def test_an_agent_reading_json_is_told_that_interpreter_runs_were_left_out(tmp_path: Path) -> None:
    """The experiment-history skill's first commands, `exp top --json` and `exp failures --json`,
    on a machine without a GPU (every run an interpreter run): stdout stays the JSON an agent
    parses, and stderr, which its shell shows too, says the empty answer is not "nothing tried"."""
    db = str(tmp_path / "cpu.sqlite")
    store = ExperimentStore(db)
    for summary, score in (("cpu", 3.0), ("cpu slow", 0.5)):
        store.create_experiment(
            KernelExperiment(change_summary=summary, score=score, metrics={"mode": "interpreter"})
        )
    store.close()
    for command, left_out in (("top", "2 interpreter runs"), ("failures", "1 interpreter run")):
        shown = subprocess.run(
            [KERNELSCOPE, "exp", command, "--db", db, "--json"], capture_output=True, text=True, timeout=120
        )
        assert shown.returncode == 0, shown
        found = json.loads(shown.stdout)
        rows = found if command == "top" else [row for group in found.values() for row in group]
        assert rows == [], found
        assert f"{left_out} left out" in shown.stderr, shown
        assert "--include-interpreter" in shown.stderr, shown


def test_masked_versions_experience_is_hidden_from_exp_reads(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for number in (1, 2, 4):
        (ws / "memory" / f"v{number}.json").write_text(
            json.dumps({"version": f"v{number}", "masked": number == 2})
        )
    db = str(tmp_path / "mask.sqlite")
    store = ExperimentStore(db)
    ids = {
        number: store.create_experiment(
            KernelExperiment(
                change_summary=f"v{number}",
                score=1 + number / 10,
                workspace=str(ws),
                memory_version=f"v{number}",
                kernels=["add_kernel"],
            )
        ).id
        for number in (1, 2, 4)
    }
    for number in (4, 1, 2):  # and a crash at each version: what `exp failures` lists
        store.create_experiment(
            KernelExperiment(
                change_summary=f"v{number} crashed",
                is_buggy=True,
                workspace=str(ws),
                memory_version=f"v{number}",
                kernels=["add_kernel"],
            )
        )
    store.close()

    def exp(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KERNELSCOPE, "exp", *args, "--db", db, "--json"], capture_output=True, text=True, timeout=120
        )

    for command in ("top", "list"):
        shown = [r["memory_version"] for r in json.loads(exp(command, "-w", str(ws)).stdout)]
        assert "v2" not in shown and {"v1", "v4"} <= set(shown), (command, shown)
        everything = [
            r["memory_version"] for r in json.loads(exp(command, "-w", str(ws), "--include-masked").stdout)
        ]
        assert "v2" in everything

    def crashed(*args: str) -> list[str]:
        return [
            r["memory_version"] for r in json.loads(exp("failures", "-w", str(ws), *args).stdout)["buggy"]
        ]

    assert crashed() == ["v4", "v1"]  # a restarted agent's "what not to do": not the masked v2's
    assert crashed("--include-masked") == ["v4", "v1", "v2"]
    # the per-kernel digest of `exp summary` leaves out the masked v2's runs too
    (summary,) = json.loads(exp("summary", "-w", str(ws)).stdout)
    assert (summary["runs"], summary["failures"], summary["latest_version"]) == (4, 2, "v1")
    assert (summary["best_version"], summary["best_score"]) == ("v4", 1.4)
    (everything,) = json.loads(exp("summary", "-w", str(ws), "--include-masked").stdout)
    assert (everything["runs"], everything["failures"], everything["latest_version"]) == (6, 3, "v2")
    refused = exp("show", ids[2])
    assert refused.returncode == 2 and "masked" in json.loads(refused.stdout)["error"]["message"]
    assert exp("show", ids[2], "--include-masked").returncode == 0
    assert exp("show", ids[4]).returncode == 0


def test_a_memory_version_is_stored_as_the_memory_names_it(tmp_path: Path) -> None:
    """`exp record --memory-version V2` (or `2`, as the memory commands accept): stored as `v2`,
    so masking v2 hides it like every other v2 experiment (before: stored as typed, it escaped
    the masked filter and the lens's per-version join); a value that is no version is refused."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "v2.json").write_text(json.dumps({"version": "v2", "masked": True}))
    db = str(tmp_path / "norm.sqlite")

    def exp(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KERNELSCOPE, "exp", *args, "--db", db, "--json"], capture_output=True, text=True, timeout=120
        )

    for typed in ("V2", "2"):
        made = exp("record", "-w", str(ws), "--summary", f"typed {typed}", "--memory-version", typed)
        assert made.returncode == 0 and json.loads(made.stdout)["memory_version"] == "v2", made
    assert json.loads(exp("list", "-w", str(ws)).stdout) == []  # both are the masked v2's
    refused = exp("record", "-w", str(ws), "--summary", "x", "--memory-version", "latest")
    assert refused.returncode == 1 and "v<N>" in refused.stdout, refused  # a usage error
    assert len(json.loads(exp("list", "-w", str(ws), "--include-masked").stdout)) == 2


def test_exp_update_stores_the_workspace_as_record_does(tmp_path: Path) -> None:
    db = str(tmp_path / "uw.sqlite")
    (tmp_path / "ws" / "memory").mkdir(parents=True)  # a workspace: update checks it as record -w does
    (tmp_path / "ws" / "kernel.py").write_text("")
    store = ExperimentStore(db)
    created = store.create_experiment(KernelExperiment(change_summary="x"))
    store.close()
    done = subprocess.run(
        [KERNELSCOPE, "exp", "update", created.id, "--set", "workspace=ws", "--db", db],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert ExperimentStore(db).require(created.id).workspace == str(tmp_path / "ws")


def test_latest_compares_timestamps_with_offsets_in_utc(tmp_path: Path) -> None:
    store = ExperimentStore(str(tmp_path / "latest.sqlite"))
    common = {"status": "done", "workspace": "/ws", "kernels": ["k"], "score": 1.1}
    store.create_experiment({**common, "id": "run1", "created_at": "2026-03-01T12:00:00+05:00"})
    store.create_experiment({**common, "id": "run2", "created_at": "2026-03-01T10:00:00Z"})
    assert store.require("run1").created_at == "2026-03-01T07:00:00Z"
    assert [s.latest_id for s in store.kernel_summaries("/ws")] == ["run2"]


@pytest.mark.parametrize("key", ["db_url", "dbUrl"])
@pytest.mark.parametrize("env", [None, "from-env.sqlite"])
def test_the_daemon_and_the_cli_open_the_config_files_store(
    key: str, env: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings reference writes keys as editors do (`dbUrl`), and getting-started promises
    that every command and the daemon use one store: either spelling in config.toml names the
    same store for both, after KERNELSCOPE_DB_URL, a relative path from the config's folder."""
    from kernelscope.daemon.lsp.configuration import apply_initialization_options
    from kernelscope.daemon.lsp.state import ServerState
    from kernelscope.protocol.settings import Settings

    config = tmp_path / "config" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'{key} = "team/exps.sqlite"\n')
    monkeypatch.setenv("KERNELSCOPE_CONFIG", str(config))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    if env is None:
        monkeypatch.delenv("KERNELSCOPE_DB_URL", raising=False)
        expected = f"sqlite:///{config.parent}/team/exps.sqlite"
    else:
        monkeypatch.setenv("KERNELSCOPE_DB_URL", env)
        expected = f"sqlite:///{cwd}/{env}"
    assert resolve_db_url() == expected  # the CLI's
    state = ServerState()
    apply_initialization_options(state, None, pytest.fail)
    settings = Settings.compose(state.user, state.folder_defaults)
    store = state.store_for(settings.db_url)
    assert store is not None
    assert store.url == expected  # the daemon's
    store.close()


def test_exp_update_says_an_unknown_id_before_looking_at_the_workspace(tmp_path: Path) -> None:
    """`exp update NOPE --set workspace=TYPO`: the id that does not exist is what the user is
    told (exit 2, as for any unknown id), not the path (before: the path was checked first and
    the answer said "not an optimization workspace" for an experiment that is not there)."""
    db = str(tmp_path / "unknown.sqlite")
    ExperimentStore(db).create_experiment(KernelExperiment(change_summary="x"))  # (the store exists)
    done = subprocess.run(
        [
            KERNELSCOPE,
            "exp",
            "update",
            "nope",
            "--set",
            f"workspace={tmp_path / 'typo'}",
            "--db",
            db,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    error = json.loads(done.stdout)["error"]
    assert done.returncode == 2 and "'nope' not found" in error["message"], done
    assert "optimization workspace" not in error["message"]


def test_the_python_api_files_an_experiment_only_under_a_workspace(tmp_path: Path) -> None:
    """`expdb.update_experiment(id, workspace=...)` and `create_experiment` apply the one rule of
    `exp record -w` / `exp update --set workspace=`: a folder that is no workspace is refused
    (a ValueError, as the seed's bad values; nothing written), a workspace is stored resolved
    (before: the API stored any path, where no lens or read of the workspace looks)."""
    from kernelscope.daemon import expdb
    from kernelscope.daemon.engine.store import NotAWorkspace

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    expdb.use_database(str(tmp_path / "api.sqlite"))
    try:
        expdb.create_experiment(KernelExperiment(id="a", change_summary="x", workspace=str(ws)))
        with pytest.raises(NotAWorkspace, match=r"not an optimization workspace.*nothing changed in a"):
            expdb.update_experiment("a", workspace=str(tmp_path / "typo"), score=2.0)
        assert isinstance(NotAWorkspace("x"), ValueError)
        kept = expdb.get_experiment("a")
        assert kept is not None and (kept.workspace, kept.score) == (str(ws), None)  # nothing written
        with pytest.raises(NotAWorkspace, match="nothing recorded"):
            expdb.create_experiment(
                KernelExperiment(id="b", change_summary="x", workspace=str(tmp_path / "typo"))
            )
        assert expdb.get_experiment("b") is None
        with pytest.raises(KeyError, match="'nope' not found"):  # the id first, as the CLI says it
            expdb.update_experiment("nope", workspace=str(tmp_path / "typo"))
        # a record re-sent whole (the seed's habit) keeps a workspace it already names, even one
        # not on this machine (imported): nothing is filed anew
        expdb.current_store().import_experiments(
            [KernelExperiment(id="c", change_summary="x", workspace="/elsewhere")]
        )
        assert expdb.update_experiment("c", workspace="/elsewhere", score=1.5).score == 1.5
        other = tmp_path / "other"
        (other / "memory").mkdir(parents=True)
        assert expdb.update_experiment("a", workspace=str(other / ".." / "other")).workspace == str(other)
    finally:
        expdb.use_database(None)
