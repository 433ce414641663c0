"""Disk full during writes: a clear error, the exit status for data problems (2), and nothing
half-written: memory files keep their bytes, no temp file is left, the experiment store passes
its integrity check with the rows it had, and the daemon answers the next request.

The full disk is a real tmpfs of 4 MB filled to the last page, mounted in a private mount
namespace (`unshare -rm`, or `unshare -m` as root), so nothing outside the test sees it. A
size-limited file (RLIMIT_FSIZE) covers the same paths where no namespace can be made."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.reliability.test_fault_injection import Daemon, _env, make_gate_only_workspace

pytestmark = pytest.mark.slow
CLI = [sys.executable, "-m", "kernelscope.daemon.cli.main"]


def _namespace_prefix(probe_dir: Path) -> list[str] | None:
    """A command prefix that gives the child its own mount namespace, or None."""
    mountpoint = probe_dir / "probe-mount"
    mountpoint.mkdir(exist_ok=True)
    for prefix in (["unshare", "-rm"], ["unshare", "-m"]):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run(
                [*prefix, "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs {shlex.quote(str(mountpoint))}"],
                capture_output=True,
                timeout=30,
            )
            if done.returncode == 0:
                return prefix
    return None


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git workspace with v0..v2 from iterations, v3..v7 copies of v1, and an experiment
    store holding three rows."""
    root = tmp_path_factory.mktemp("disk-full")
    make_gate_only_workspace(root, iterations=3, copies_up_to=7)
    return root


def _filled_tmpfs_script(template: Path, mount: Path, then: str) -> str:
    return "\n".join(
        [
            "set -e",
            f"mount -t tmpfs -o size=4m tmpfs {shlex.quote(str(mount))}",
            f"cp -a {shlex.quote(str(template))}/. {shlex.quote(str(mount))}/",
            # fill every remaining page (dd stops at ENOSPC)
            f"dd if=/dev/zero of={shlex.quote(str(mount / 'filler'))} bs=4096 2>/dev/null || true",
            then,
        ]
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file in memory/ (temp files included) but the lock file, which may be created."""
    return {
        p.name: p.read_bytes()
        for p in sorted((root / "ws" / "memory").iterdir())
        if p.name != ".kernelscope.lock"
    }


def _experiments(db: Path) -> tuple[str, int]:
    with contextlib.closing(sqlite3.connect(db)) as connection:
        check = connection.execute("PRAGMA integrity_check").fetchone()[0]
        return check, int(connection.execute("SELECT count(*) FROM experiments").fetchone()[0])


CASES = {
    "update": ["memory", "update", "-w", "{ws}", "--version", "v1", "--set", 'notes="' + "x" * 5000 + '"'],
    "mask-half": ["memory", "mask-half", "-w", "{ws}", "--seed", "1", "--force"],
    # --force: kernel.py is v7's code, which iterate would otherwise refuse as already measured
    "iterate": ["iterate", "-w", "{ws}", "--db", "{db}", "-a", "fault", "-d", "on a full disk", "--force"],
    "experiment": ["exp", "record", "--db", "{db}", "-m", "on a full disk", "--score", "1.2"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_cli_on_a_full_disk(template: Path, tmp_path: Path, case: str) -> None:
    prefix = _namespace_prefix(tmp_path)
    if prefix is None:
        pytest.skip("no mount namespace here (unshare): covered by the RLIMIT_FSIZE test")
    mount, out = tmp_path / "mnt", tmp_path / "out"
    mount.mkdir()
    out.mkdir()
    argv = [a.format(ws=mount / "ws", db=mount / "exp.sqlite") for a in CASES[case]]
    then = (
        f"set +e; {shlex.join([*CLI, *argv])} >{out}/stdout 2>{out}/stderr; echo $? >{out}/rc; "
        f"cp -a {mount}/ws {mount}/exp.sqlite {out}/"
    )
    done = subprocess.run(
        [*prefix, "bash", "-c", _filled_tmpfs_script(template, mount, then)],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rc, stderr = int((out / "rc").read_text()), (out / "stderr").read_text()
    assert rc == 2, (rc, stderr)
    # SQLite says "database or disk is full" or, when it cannot even grow its WAL, "disk I/O
    # error": the message names the disk either way and says nothing was recorded.
    assert ("disk full" in stderr or "a full disk" in stderr) and "Traceback" not in stderr, stderr
    if case in ("experiment", "iterate") and "memory" not in stderr:
        assert "nothing was recorded" in stderr, stderr
    assert _snapshot(out) == _snapshot(template)  # byte for byte, no temp file left
    assert _experiments(out / "exp.sqlite") == _experiments(template / "exp.sqlite")


def test_daemon_on_a_full_disk(template: Path, tmp_path: Path) -> None:
    """The daemon on a full disk: a write command fails with a clear error, nothing changes,
    and the daemon keeps answering."""
    prefix = _namespace_prefix(tmp_path)
    if prefix is None:
        pytest.skip("no mount namespace here (unshare): covered by the RLIMIT_FSIZE test")
    mount = tmp_path / "mnt"
    mount.mkdir()
    serve = shlex.join([*CLI, "serve"])
    script = _filled_tmpfs_script(template, mount, f"exec {serve}")
    ws, db = mount / "ws", mount / "exp.sqlite"
    daemon = Daemon(tmp_path, ws, db, command=[*prefix, "bash", "-c", script])
    try:
        for request_id, (command, params) in enumerate(
            [
                ("kernelscope.maskHalf", {"workspace": str(ws), "seed": 1, "force": True}),
                (
                    "kernelscope.recordExperiment",
                    {"workspace": str(ws), "changeSummary": "full", "score": 1.0},
                ),
            ],
            start=10,
        ):
            daemon.execute(command, params, request_id=request_id)
            reply = daemon.wait(lambda m, i=request_id: m.get("id") == i, 60)
            message = reply["error"]["message"]
            assert "disk full" in message or "a full disk" in message, reply
        daemon.execute("kernelscope.showHistory", {"workspace": str(ws)}, request_id=20)
        history = daemon.wait(lambda m: m.get("id") == 20, 60)
        assert len(history["result"]["entries"]) == 8  # still answering, nothing recorded
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.process.pid, 9)
        daemon.process.wait()


def _limit_file_size(limit: int):  # type: ignore[no-untyped-def]
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize("case", ["update", "mask-half", "experiment"])
def test_size_limited_files(template: Path, tmp_path: Path, case: str) -> None:
    """RLIMIT_FSIZE (Python ignores SIGXFSZ, so writes fail with EFBIG): the same guarantees
    without a mount namespace."""
    work = tmp_path / "work"
    shutil.copytree(template, work)
    argv = [a.format(ws=work / "ws", db=work / "exp.sqlite") for a in CASES[case]]
    if case == "experiment":  # a row bigger than the limit must not fit in the database
        raw = tmp_path / "raw.txt"
        raw.write_text("r" * 200_000)
        argv += ["--raw-result", f"@{raw}"]
    size = (work / "exp.sqlite").stat().st_size
    done = subprocess.run(
        [*CLI, *argv],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        preexec_fn=_limit_file_size(1000 if case != "experiment" else size + 4096),
        timeout=120,
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    expected = "nothing was recorded" if case == "experiment" else "file size limit exceeded"
    assert expected in done.stderr, done.stderr
    assert _snapshot(work) == _snapshot(template)
    assert _experiments(work / "exp.sqlite") == _experiments(template / "exp.sqlite")


def test_half_way_failure_restores_what_was_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mask-half writes several files; when the disk fills after two of them, those two get
    their old content back and the error says no file was changed."""
    from kernelscope.daemon.engine import WriteFailed
    from kernelscope.daemon.engine.memory import atomic_io
    from kernelscope.daemon.engine.memory.records import MemoryManager

    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    for n in range(5, 12):
        record = json.loads((ws / "memory" / "v1.json").read_text())
        (ws / "memory" / f"v{n}.json").write_text(json.dumps({**record, "version": f"v{n}"}, indent=2) + "\n")
    before = _snapshot(tmp_path)
    real, calls = atomic_io._atomic_write_bytes, []

    def fill_after_two(path: Path, data: bytes) -> None:
        calls.append(path.name)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(atomic_io, "_atomic_write_bytes", fill_after_two)
    with pytest.raises(WriteFailed, match="no file was changed"):
        MemoryManager(ws).mask_half(None, seed=4)
    assert len(calls) > 3  # two written, one failed, the two restored
    assert _snapshot(tmp_path) == before


def test_a_mask_half_that_fails_leaves_the_mark_it_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mask-half writes its mark (beside the locks) before the records; when the disk filled
    while it wrote the records, nothing was masked but the new mark stayed, and an iteration
    measuring meanwhile was refused as if a restart had happened. The mark it found (none, or
    the previous mask-half's) is back; a mark that cannot be written still stops the mask."""
    from kernelscope.daemon.engine import WriteFailed
    from kernelscope.daemon.engine.memory import atomic_io
    from kernelscope.daemon.engine.memory.records import MASK_HALF_MARK, MemoryManager
    from kernelscope.daemon.engine.workflows.iterate import refuse_if_restarted

    ws = _ws_of_twelve(tmp_path)
    memory = MemoryManager(ws)
    real, full = atomic_io._atomic_write_bytes, {"at": ""}

    def disk_full(path: Path, data: bytes) -> None:
        if path.name.startswith(full["at"]) and full["at"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(atomic_io, "_atomic_write_bytes", disk_full)
    for previous in ("none", "a mask-half's"):
        if previous != "none":
            memory.mask_half(None, seed=1)
        found, before = memory.mask_half_mark(), _snapshot(tmp_path)
        full["at"] = "v"  # the records: the mark is written, the mask fails
        with pytest.raises(WriteFailed, match="no file was changed"):
            memory.mask_half(None, seed=4)
        assert _snapshot(tmp_path) == before, previous
        assert memory.mask_half_mark() == found, previous
        refuse_if_restarted(memory, found)  # an iteration measuring meanwhile records
        full["at"] = MASK_HALF_MARK  # the mark itself cannot be written: nothing masked
        with pytest.raises(WriteFailed):
            memory.mask_half(None, seed=4)
        assert _snapshot(tmp_path) == before and memory.mask_half_mark() == found, previous
        full["at"] = ""


READ_ONLY_GIT = {  # each takes kernelscope's locks under .git/kernelscope before it writes
    "iterate": CASES["iterate"],
    "mask-half": CASES["mask-half"],
    "update": ["memory", "update", "-w", "{ws}", "--version", "v1", "--set", 'notes="read-only"'],
}


@pytest.mark.parametrize("case", list(READ_ONLY_GIT))
def test_cli_with_a_read_only_git_folder(template: Path, tmp_path: Path, case: str) -> None:
    """An agent's sandbox that keeps .git read-only (Codex's workspace-write): the commands that
    write take their lock there first, and said so with an OSError traceback. A clear error
    naming the lock, exit 2, memory/ and the store as they were. .git is bind-mounted read-only
    in a private mount namespace."""
    prefix = _namespace_prefix(tmp_path)
    if prefix is None:
        pytest.skip("no mount namespace here (unshare)")
    copy = tmp_path / "copy"
    shutil.copytree(template, copy, symlinks=True)
    shutil.rmtree(copy / "ws" / ".git" / "kernelscope", ignore_errors=True)  # no lock file yet
    git = copy / "ws" / ".git"
    argv = [a.format(ws=copy / "ws", db=copy / "exp.sqlite") for a in READ_ONLY_GIT[case]]
    script = f"mount --bind {git} {git} && mount -o remount,bind,ro {git} && exec {shlex.join([*CLI, *argv])}"
    done = subprocess.run(
        [*prefix, "bash", "-c", script], capture_output=True, text=True, env=_env(tmp_path), timeout=300
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert "could not take kernelscope's lock" in done.stderr and "read-only file system" in done.stderr
    assert str(git / "kernelscope") in " ".join(done.stderr.split()), done.stderr
    assert {p.name: p.read_bytes() for p in (copy / "ws" / "memory").iterdir()} == {
        p.name: p.read_bytes() for p in (template / "ws" / "memory").iterdir()
    }
    assert _experiments(copy / "exp.sqlite") == _experiments(template / "exp.sqlite")


def test_bench_with_a_read_only_tmp(tmp_path: Path) -> None:
    """An agent's sandbox that keeps /tmp read-only and sets no TMPDIR (Codex's workspace-write
    with `exclude_slash_tmp`): Python's temporary folder is then the workspace itself, and the
    scratch copy's fallback to /tmp died with an OSError traceback (exit 1). A clear error
    naming /tmp and what to allow, exit 2, one JSON document, the workspace as it was. /tmp
    and /var/tmp are bind-mounted read-only in a private mount namespace, the workspace
    (under /tmp) writable."""
    prefix = _namespace_prefix(tmp_path)
    if prefix is None:
        pytest.skip("no mount namespace here (unshare)")
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    before = sorted(p.relative_to(ws) for p in ws.rglob("*"))
    read_only = " && ".join(
        f"mount --bind {d} {d} && mount -o remount,bind,ro {d}"
        for d in ("/var/tmp", "/usr/tmp")
        if Path(d).is_dir()
    )
    bench = shlex.join([*CLI, "bench", "-w", str(ws), "--mode", "interpreter", "--json"])
    script = (
        f"mount --bind {ws} {ws} && mount --rbind /tmp /tmp && mount -o remount,bind,ro /tmp"
        f"{' && ' + read_only if read_only else ''} && cd {ws} && exec {bench}"
    )
    env = {k: v for k, v in _env(tmp_path).items() if k not in ("TMPDIR", "TEMP", "TMP")}
    done = subprocess.run(
        [*prefix, "bash", "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr
    message = json.loads(done.stdout)["error"]["message"]
    assert "(/tmp: read-only file system)" in message and "set TMPDIR" in message, message
    assert sorted(p.relative_to(ws) for p in ws.rglob("*")) == before


def _ws_of_twelve(tmp_path: Path) -> Path:
    """examples/vector_add with v5-v11 copies of v1 (a mask-half masks several), in git."""
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)  # (the mark is kept in git only)
    for n in range(5, 12):
        record = json.loads((ws / "memory" / "v1.json").read_text())
        (ws / "memory" / f"v{n}.json").write_text(json.dumps({**record, "version": f"v{n}"}, indent=2) + "\n")
    return ws


def test_a_mask_half_the_disk_filled_under_names_what_it_left_written(  # type: ignore[no-untyped-def]
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    """atomic_write_all's PartlyWritten, through `kernelscope memory mask-half`: the disk fills
    at the third record and stays full, so the two already written cannot get their old content
    back. Exit 2, no traceback, a message naming the file not written and the two left with
    the new content; every other file as it was, the mark kept (part of the mask stays), no
    journal or temp file left."""
    from kernelscope.daemon.engine.memory import atomic_io
    from kernelscope.daemon.engine.memory.records import MemoryManager

    ws = _ws_of_twelve(tmp_path)
    planned = MemoryManager(ws).mask_half(None, seed=4, dry_run=True)
    before = _snapshot(tmp_path)
    real, written, failed = atomic_io._atomic_write_bytes, [], []

    def fills_at_the_third_record(path: Path, data: bytes) -> None:
        if path.name.startswith("v"):
            if len(written) == 2 or failed:  # full from the third record on: no restore either
                failed.append(path.name)
                raise OSError(errno.ENOSPC, "No space left on device")
            written.append(path.name)
        real(path, data)

    monkeypatch.setattr(atomic_io, "_atomic_write_bytes", fills_at_the_third_record)
    result = cli("memory", "mask-half", "-w", str(ws), "--seed", "4")
    assert result.exit_code == 2, result
    said = " ".join(result.stderr.split())
    assert "Traceback" not in said and ("disk full" in said or "a full disk" in said), said
    after = _snapshot(tmp_path)
    changed = sorted(name for name in before if after.get(name) != before[name])
    assert changed == sorted(written) and len(written) == 2, (changed, written)
    assert set(after) == set(before), sorted(set(after) ^ set(before))  # no journal, no temp file
    assert f"{', '.join(written)} already had the new content and could not be restored" in said, said
    assert f"{failed[0]}: no space left on the device (disk full); {failed[0]} was left as it was" in said, (
        said
    )
    untouched = [f"{v}.json" for v in [*planned.masked, planned.pitfall_recorded_in]]
    untouched = [name for name in untouched if name not in written and name != failed[0]]
    assert untouched and f"; {', '.join(untouched)} kept their old content" in said, (untouched, said)
    mark = MemoryManager(ws).mask_half_mark()
    assert mark is not None and mark["seed"] == 4, mark  # part of the mask stays: so does its mark


def test_a_mark_that_cannot_be_put_back_is_removed(  # type: ignore[no-untyped-def]
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    """atomic_io.restore failing, through `kernelscope memory mask-half`: a previous
    mask-half's mark is there, the new mark is written, the first record fails (nothing
    masked) and the disk stays full, so the previous mark cannot be written back. Exit 2, the
    records as they were, and no mark at all (the new one would refuse an iteration measuring
    meanwhile for a mask that did not happen; no mark refuses none)."""
    from kernelscope.daemon.engine.memory import atomic_io
    from kernelscope.daemon.engine.memory.records import MASK_HALF_MARK, MemoryManager
    from kernelscope.daemon.engine.workflows.iterate import refuse_if_restarted

    ws = _ws_of_twelve(tmp_path)
    memory = MemoryManager(ws)
    memory.mask_half(None, seed=1)
    found, before = memory.mask_half_mark(), _snapshot(tmp_path)
    assert found is not None
    real, full = atomic_io._atomic_write_bytes, {"now": False}

    def full_from_the_first_record(path: Path, data: bytes) -> None:
        full["now"] = full["now"] or path.name.startswith("v")
        if full["now"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(atomic_io, "_atomic_write_bytes", full_from_the_first_record)
    restored: list[bool] = []
    real_restore = atomic_io.restore

    def spied_restore(path: Path, old: bytes | None) -> bool:
        restored.append(real_restore(path, old))
        return restored[-1]

    import kernelscope.daemon.engine.memory.records as records

    monkeypatch.setattr(records, "restore", spied_restore)
    result = cli("memory", "mask-half", "-w", str(ws), "--seed", "4")
    assert result.exit_code == 2, result
    said = " ".join(result.stderr.split())
    assert "Traceback" not in said and "no file was changed" in said, said
    assert restored == [False], restored  # the path under test: the put-back failed
    assert _snapshot(tmp_path) == before
    assert memory.mask_half_mark() is None and not (memory.lock_dir / MASK_HALF_MARK).exists()
    refuse_if_restarted(memory, found)  # an iteration measuring meanwhile records
