"""The memory manager: reads and changes `memory/v<N>.json` records safely.

A superset of the seed's `tools/memory_manager.py` (same commands and flags), with what
that script lacks: atomic writes under a per-workspace lock (no torn files, no lost
updates), numeric version order (v10 after v9), corrupt files reported by name instead of
crashing every command, and `mask-half` as one recorded, reproducible operation.

Records are edited as the raw JSON objects they are on disk, so masking or updating one
field keeps every other key, unknown keys and key order; the indent the file was written
with is kept too. No operation deletes a file.

Incremental reads (a `FileReads` given to the manager; the daemon's workspace cache owns one
per workspace): `scan()` keeps what it parsed per file and re-reads only files whose identity
(device, inode, size, mtime_ns, ctime_ns) changed, so in a workspace of 1,000 versions a new
record costs one file read and a directory listing, not a rescan. A file modified in the same
clock tick as it was read could keep its size and timestamps: like git's "racy" index entries,
a file whose timestamp is within `RACY_NS` of the moment it was read is read again on the next scan.
Writes of kernelscope itself replace files (a new inode), so they are always seen.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import logging
import os
import random
import secrets
import shlex
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelscope.daemon.engine import DataError, UsageError, WriteFailed, load_json
from kernelscope.daemon.engine.memory import atrex_fields, core
from kernelscope.daemon.engine.memory.atomic_io import (
    JOURNAL_NAME,
    JournalPlan,
    NotOurJournal,
    PartlyWritten,
    atomic_write_all,
    atomic_write_text,
    detect_indent,
    dump_json,
    iteration_lock,
    lock_dir_of,
    memory_write_lock,
    no_writer_inside,
    plan_journal,
    refuse_if_restarting,
    restore,
)
from kernelscope.daemon.engine.memory.core import BASELINE, MEMORY_DIR, normalize_version
from kernelscope.daemon.engine.memory.record_edits import (  # the rules the fast CLI path shares
    parse_assignment,
    parse_cli_value,  # noqa: F401 - re-exported: `exp --set` and the fast path's tests use it
    set_path,
)
from kernelscope.protocol import workspace_files
from kernelscope.protocol.commands import MaskHalfResult
from kernelscope.protocol.memory import (
    MemoryRecord,
    format_version,
    memory_schema_template,
    parse_version,
)
from kernelscope.protocol.workspace import MetricKind, ReadmeInfo, VersionSummary

# the latest mask-half, beside the locks (atomic_io.lock_dir_of: the git directory, outside git memory/)
MASK_HALF_MARK = ".kernelscope-mask-half.json"
# a restart's mark's id, in its agent's environment: the agent's iterations record the version
# the restart promised it (workflows/iterate.py refuse_if_promised)
RESTART_ID_ENV = "KERNELSCOPE_RESTART_ID"

# -- incremental reads ---------------------------------------------------------------
RACY_NS = 100_000_000  # re-check a file whose timestamp is this close to when it was read


@dataclass(frozen=True)
class _Read:
    identity: tuple[int, int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns
    read_ns: int  # wall clock just before the read
    entry: MemoryEntry

    def still_valid(self, identity: tuple[int, int, int, int, int]) -> bool:
        return identity == self.identity and self.read_ns - max(identity[3], identity[4]) > RACY_NS


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass(frozen=True)
class MemoryEntry:
    """One memory file as found on disk: its number, path, JSON object (None when unreadable),
    validated record, or the reason there is none. `pending`: not as on disk but as a cut-short
    multi-file write (a mask-half) leaves it once finished (MemoryManager.scan)."""

    number: int
    path: Path
    raw: dict[str, Any] | None
    error: str | None
    record: MemoryRecord | None = None
    indent: int = 2
    pending: bool = False
    error_line: int | None = None  # the 1-based line of the file `error` is about (None: the whole file)

    @property
    def version(self) -> str:
        return core.format_version(self.number)

    @property
    def ok(self) -> bool:
        return self.record is not None

    @property
    def masked(self) -> bool:
        return bool(self.record and self.record.is_masked)


def unreadable_note(names: list[str], left_out_of: str | None = None) -> str:
    """What every reader says of memory files it cannot read (`names`), which it leaves out of
    every figure and comparison (`left_out_of`: what it says they are left out of): said, or
    their absence reads as data (three named, then a count), with the command that says why."""
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    shown = ", ".join(f"memory/{name}" for name in names[:3])
    left_out = f": left out of {left_out_of}" if left_out_of else ""
    return f"{shown}{more} cannot be read{left_out} (`kernelscope memory list` says why)"


def unreadable_record_note(name: str, error: str) -> str:
    """What is said on a memory file that cannot be read (`name`), at the file itself: why
    (`error`, which names the file first when it can) and what reads it leaves out, so that
    its absence is not read as data."""
    why = error.removeprefix(f"{name}: ")
    return (
        f"memory/{name} cannot be read: {why}; it is left out of every figure, lens and comparison "
        "of kernel.py (a value tried only here reads as never tried)"
    )


def cut_short_note(names: list[str], workspace: Path | None = None) -> str:
    """What every reader says of a cut-short multi-file write it shows finished (`names`: the
    files not yet written), and the command that finishes it on disk."""
    shown = ", ".join(sorted(names, key=lambda name: (len(name), name)))
    command = "kernelscope memory init"
    if workspace is not None:
        command += f" -w {shlex.quote(str(workspace))}"
    return (
        f"a mask-half (or a mask of several versions) was cut short: {shown} shown as it leaves "
        f"them, not yet written; `{command}` (or any kernelscope write to memory/) finishes it"
    )


class FileReads:
    """What `MemoryManager.scan()` parsed per file of one memory/ folder, kept between scans
    (module docstring). Entries handed out are shared: callers must not change them
    (`read_all` hands out copies). Thread-safe."""

    def __init__(self) -> None:
        self._reads: dict[str, _Read] = {}
        self._lock = threading.Lock()

    def scan(self, manager: MemoryManager) -> list[MemoryEntry]:
        """`manager.scan()` reading only the files that changed since the last scan."""
        entries: list[MemoryEntry] = []
        with self._lock:
            seen: set[str] = set()
            try:
                listing = list(os.scandir(manager.memory_dir))
            except OSError:
                listing = []
            for item in listing:
                match = core.FILE_RE.match(item.name)
                if not match:
                    continue
                try:
                    info = item.stat()  # follows a link
                except OSError:
                    info = None
                if info is None or not stat.S_ISREG(info.st_mode):  # a folder, a dangling link:
                    entries.append(manager._load(int(match.group(1)), Path(item.path)))  # listed, unread
                    continue
                identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
                seen.add(item.name)
                cached = self._reads.get(item.name)
                if cached is not None and cached.still_valid(identity):
                    entries.append(cached.entry)
                    continue
                read_ns = time.time_ns()
                entry = manager._load(int(match.group(1)), Path(item.path))
                self._reads[item.name] = _Read(identity, read_ns, entry)
                entries.append(entry)
            for gone in set(self._reads) - seen:  # deleted (or no longer a file): dropped
                del self._reads[gone]
        hidden = core.shadowed([(entry.number, entry.path.name) for entry in entries])
        entries = [entry for entry in entries if entry.path.name not in hidden]
        entries.sort(key=lambda entry: entry.number)
        return entries


class MemoryManager:
    """All reads and writes of one workspace's `memory/` directory."""

    def __init__(self, workspace: Path | str, reads: FileReads | None = None) -> None:
        self.workspace = Path(workspace).resolve()
        self.memory_dir = self.workspace / MEMORY_DIR
        self.reads = reads  # parsed files kept between scans (the daemon's), or None: read all

    @property
    def lock_dir(self) -> Path:
        """Where the workspace's locks live (atomic_io.lock_dir_of)."""
        return lock_dir_of(self.workspace)

    # -- reading --------------------------------------------------------------------

    def path_of(self, version: str) -> Path:
        """The version's file: the one there (`v010.json` too), else the one to create."""
        try:
            return core.file_of(self.memory_dir, version)[1]
        except DataError:
            return self.memory_dir / f"{normalize_version(version)}.json"

    def taken(self, version: str) -> bool:
        """Whether the version's name is taken (core.version_taken: as next_version counts)."""
        return core.version_taken(self.memory_dir, version)

    def scan(self) -> list[MemoryEntry]:
        """Every `v<N>.json`, numerically sorted; corrupt files carry their error.

        A multi-file write (a mask-half) cut short leaves its journal in memory/: a scan shows
        the records as finishing it will leave them (atomic_io.plan_journal, the replay's own
        rule, applied in memory: those entries are `pending`) and says so (a warning,
        cut_short_note); it writes nothing, not even a lock file. The next write finishes it
        on disk, under the lock (atomic_io.memory_write_lock). A journal a live writer holding
        the lock is writing is not one cut short: the scan waits for that writer first
        (atomic_io.no_writer_inside), and where it is still writing reads what is on disk."""
        if not self.memory_dir.is_dir():
            return []
        if not (self.memory_dir / JOURNAL_NAME).exists():
            return self._scan_files()
        with no_writer_inside(self.workspace) as free:
            plan = self._journal_plan() if free else None
            entries = self._scan_files()
        if plan is None or not plan.writes:
            return entries
        by_name = {entry.path.name: entry for entry in entries}
        for name, text in plan.writes.items():
            number = int(core.FILE_RE.fullmatch(name).group(1))  # type: ignore[union-attr]
            loaded = self._load(number, self.memory_dir / name, text)
            by_name[name] = dataclasses.replace(loaded, pending=True)
        # (each scan: the CLI prints it once a command, the daemon says it in its file lens)
        logging.getLogger(__name__).warning(cut_short_note(list(plan.writes), self.workspace))
        return sorted(by_name.values(), key=lambda entry: entry.number)

    def _scan_files(self) -> list[MemoryEntry]:
        if self.reads is not None:
            return self.reads.scan(self)
        return [self._load(number, path) for number, path in core.record_files(self.memory_dir)]

    def _journal_plan(self) -> JournalPlan | None:
        try:
            return plan_journal(self.memory_dir, core.FILE_RE)
        except NotOurJournal:  # not kernelscope's: nothing to show (the next write removes it)
            return None

    def _load(self, number: int, path: Path, text: str | None = None) -> MemoryEntry:
        found = core.read_file(number, path, text)
        if found.raw is None:
            return MemoryEntry(number, path, None, found.error, error_line=found.error_line)
        raw = found.raw
        data = core.with_version(raw, number)
        try:
            record = MemoryRecord.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            field = first["loc"][0] if first["loc"] else None  # (its top-level field's line)
            line = core.key_line(found.text, field) if isinstance(field, str) else None
            return MemoryEntry(
                number, path, raw, f"{path.name}: invalid {where}: {first['msg']}", error_line=line
            )
        if found.error is None and record.number != number:  # a record core could not vouch for
            said = core.mismatch(path, record.version, number)
            return MemoryEntry(number, path, raw, said, error_line=core.key_line(found.text, "version"))
        if found.error is not None:
            return MemoryEntry(number, path, raw, found.error, error_line=found.error_line)
        return MemoryEntry(number, path, raw, None, record, detect_indent(found.text))

    def entry(self, version: str) -> MemoryEntry:
        """One version's entry (as a scan shows it: a cut-short write's journal applied);
        DataError when it does not exist or cannot be read."""
        number, path = core.file_of(self.memory_dir, version)
        if (self.memory_dir / JOURNAL_NAME).exists():  # (never under the write lock: replayed there)
            entry = next((e for e in self.scan() if e.path.name == path.name), None)
            entry = entry if entry is not None else self._load(number, path)
        else:
            entry = self._load(number, path)
        if entry.error:
            raise DataError(f"{entry.error}")
        return entry

    def read(self, version: str, field: str | None = None, include_masked: bool = False) -> Any:
        """A version's record (or one dotted field of it). Masked versions need `include_masked`."""
        entry = self.entry(version)
        if entry.masked and not include_masked:
            raise DataError(
                f"{entry.version} is masked: its experience is hidden from the active memory "
                "(pass --include-masked to read it anyway, or unmask it)"
            )
        assert entry.raw is not None
        return self._field(entry, field)

    def read_all(self, field: str | None = None, include_masked: bool = False) -> tuple[list[Any], list[str]]:
        """All readable records (unmasked only by default) and the errors of the others."""
        results: list[Any] = []
        errors: list[str] = []
        shared = self.reads is not None  # entries kept between scans: hand out copies
        for entry in self.scan():
            if entry.error:
                errors.append(entry.error)
                continue
            if entry.masked and not include_masked:
                continue
            if field is None:
                results.append(copy.deepcopy(entry.raw) if shared else entry.raw)
            else:
                try:
                    value = self._field(entry, field)
                except DataError:
                    value = None
                results.append({"version": entry.version, field: copy.deepcopy(value) if shared else value})
        return results, errors

    @staticmethod
    def _field(entry: MemoryEntry, field: str | None) -> Any:
        assert entry.raw is not None
        return core.field_of(entry.raw, entry.version, field)

    def next_version(self) -> str:
        """One past the highest version on disk, masked, unmasked or corrupt alike."""
        entries = self.scan()
        return format_version(entries[-1].number + 1 if entries else 0)

    def latest_unmasked(self) -> str | None:
        for entry in reversed(self.scan()):
            if entry.ok and not entry.masked:
                return entry.version
        return None

    def summaries(self, kind: MetricKind | None = None) -> list[VersionSummary]:
        """One row per version for `list`/`summary`: gate, metrics, the latency ratio vs v0
        and the one score every surface shows (`kind`: the README's primary metric)."""

        entries = self.scan()
        baseline = next((e for e in entries if e.number == 0 and e.record), None)
        base = baseline.raw if baseline is not None else None
        v0 = atrex_fields.BaseWorkloads(base) if base is not None else None  # (once, not per row)
        return [
            VersionSummary(
                **core.summary_row(entry.number, entry.path, entry.raw, entry.error, base, kind, v0)
            )
            for entry in entries
        ]

    # -- writing --------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """The memory write lock (atomic_io.memory_write_lock), which every memory write holds."""
        with memory_write_lock(self.workspace):
            yield

    def _write(self, path: Path, data: dict[str, Any], indent: int = 2) -> None:
        atomic_write_text(path, dump_json(data, indent))

    def _read_raw_for_update(self, version: str) -> tuple[Path, dict[str, Any], int]:
        entry = self.entry(version)
        assert entry.raw is not None
        return entry.path, entry.raw, entry.indent

    def init(self) -> Path:
        """Create memory/; one that holds a cut-short multi-file write gets it finished (the
        memory write lock replays it: the one command that finishes it and changes nothing else)."""
        self.memory_dir.mkdir(parents=True, exist_ok=True)
        if (self.memory_dir / JOURNAL_NAME).exists():
            with self._lock():
                pass
        return self.memory_dir

    def create(self, version: str, force: bool = False) -> Path:
        """A new record from the schema template; refuses to overwrite unless `force`. In a
        workspace a supervisor drives it refuses unless `force`, and never creates the version
        the supervisor's running episode will write."""
        from kernelscope.daemon.engine.workspace.atrex import refuse_if_supervised, reserved_versions

        normalized = normalize_version(version)
        refuse_if_supervised(self.workspace, "create memory records", force)
        if parse_version(normalized) in reserved_versions(self.workspace):
            raise DataError(
                f"refusing to create {normalized}: the supervisor's running episode will write it; "
                "nothing was changed"
            )
        with self._lock():
            path = self.path_of(normalized)
            core.refuse_if_in_the_way(path)  # (a folder: --force would not help)
            if path.exists() and not force:
                raise DataError(f"{path} already exists (use --force to overwrite it)")
            self._write(path, memory_schema_template(normalized, utc_now_iso()))
        return path

    def write_record(self, version: str, data: dict[str, Any], overwrite: bool = False) -> Path:
        """Write a whole record (used by workflows); validated before anything is written."""
        normalized = normalize_version(version)
        payload = {"version": normalized, **{k: v for k, v in data.items() if k != "version"}}
        try:
            MemoryRecord.model_validate(payload)
            dump_json(payload)
        except (ValidationError, ValueError) as exc:
            raise DataError(f"refusing to write invalid record {normalized}: {exc}") from None
        with self._lock():
            path = self.path_of(normalized)
            core.refuse_if_in_the_way(path)
            if path.exists() and not overwrite:
                raise DataError(f"{path} already exists")
            self._write(path, payload)
        return path

    def update(
        self,
        version: str,
        assignments: Iterable[str],
        allow_baseline: bool = False,
        allow_supervised: bool = False,
    ) -> dict[str, Any]:
        """Apply `a.b=VALUE` assignments atomically: all of them are written, or none. The
        rules of `set_masked` hold here too: a supervised workspace is refused unless
        `allow_supervised`, masking v0 unless `allow_baseline`."""
        from kernelscope.daemon.engine.workspace.atrex import refuse_if_supervised

        parsed = [parse_assignment(item) for item in assignments]
        if not parsed:
            raise UsageError("nothing to update: give at least one --set KEY=VALUE")
        for path, value in parsed:
            if path == ["version"]:
                raise UsageError("the version field follows the file name and cannot be --set")
            if path == ["masked"] and not isinstance(value, bool):
                raise UsageError("masked must be true or false")
            if path == ["masked"] and value and core.is_baseline(version) and not allow_baseline:
                raise DataError(core.MASK_BASELINE_REFUSAL)
        refuse_if_supervised(self.workspace, "update memory records", allow_supervised)
        with self._lock():
            file_path, data, indent = self._read_raw_for_update(version)
            for path, value in parsed:
                set_path(data, path, value)
            try:
                MemoryRecord.model_validate(
                    core.with_version(data, parse_version(normalize_version(version)))
                )
                text = dump_json(data, indent)
            except (ValidationError, ValueError) as exc:
                raise DataError(f"update would make {file_path.name} invalid: {exc}") from None
            atomic_write_text(file_path, text)
        return data

    def set_masked(
        self,
        versions: Iterable[str],
        masked: bool,
        allow_baseline: bool = False,
        allow_supervised: bool = False,
    ) -> list[str]:
        """Mask or unmask versions (only the `masked` key changes). All are checked first."""
        from kernelscope.daemon.engine.workspace.atrex import refuse_if_supervised

        refuse_if_supervised(self.workspace, "mask or unmask memory records", allow_supervised)
        normalized = list(dict.fromkeys(normalize_version(v) for v in versions))
        if not normalized:
            raise UsageError("no versions given")
        if masked and BASELINE in normalized and not allow_baseline:
            raise DataError(core.MASK_BASELINE_REFUSAL)
        changed: list[str] = []
        writes: list[tuple[Path, str]] = []
        with self._lock():
            loaded = [self._read_raw_for_update(v) for v in normalized]  # all exist and parse
            for version, (path, data, indent) in zip(normalized, loaded, strict=True):
                if data.get("masked") is masked:
                    continue
                data["masked"] = masked
                writes.append((path, dump_json(data, indent)))
                changed.append(version)
            atomic_write_all(writes)
        return changed

    # -- mask-half --------------------------------------------------------------------

    def best_version(self, entries: list[MemoryEntry], kind: MetricKind | None) -> tuple[str | None, str]:
        """The current best among unmasked versions whose gate passed, and the rule used: the
        one best every surface names (scores.best_version: the highest score vs v0, from
        latency where v0 and the version record one, else from the README's primary metric
        `kind`)."""
        from kernelscope.daemon.engine.memory import scores

        return scores.best_version(entries, kind)

    def mask_half_command(
        self,
        readme: ReadmeInfo | None,
        seed: int | None,
        force: bool,
        dry_run: bool = False,
        asking: bool = False,
    ) -> MaskHalfResult:
        """The mask-half command's (the CLI's, the editor's, their questions'): the best kept by
        the README's primary metric where records have no latency; `force` skips unreadable
        files and writes in an orchestrator's workspace.

        `asking` (the dry run the editor's question is made of, before the write): refused as
        the write would be, an orchestrator's workspace and a running restart, so that nobody
        is asked a question whose yes then fails; still nothing written, not even a lock file
        (the write asks again under the iteration lock: mask_half)."""
        if asking:
            from kernelscope.daemon.engine.workspace.atrex import refuse_if_supervised

            refuse_if_supervised(self.workspace, "mask half of the memory", force)
            refuse_if_restarting(self.workspace, "mask half of the memory")
        kind = readme.primary_kind if readme else None
        return self.mask_half(kind, seed=seed, dry_run=dry_run or asking, force=force, allow_supervised=force)

    def mask_half(
        self,
        kind: MetricKind | None,
        seed: int | None = None,
        dry_run: bool = False,
        force: bool = False,
        allow_supervised: bool = False,
        for_restart: bool = False,
    ) -> MaskHalfResult:
        """Mask half of the optimization experience, as the partial-restart seed asks.

        Candidates are the unmasked versions other than v0, the current best and the latest
        whose gate passed (the seed keeps "the latest successful iteration"); half of
        them (rounded down) are chosen with a seeded RNG and masked, and an entry saying
        what was masked, with the seed and time, is appended to the latest unmasked
        record's `pitfalls_and_fixes`. Corrupt files make it refuse unless `force`; a
        workspace an orchestrator drives, unless `allow_supervised` (formats.atrex).

        In git it holds the workspace's iteration lock, as an iteration's write phase does:
        an iteration past its restart check (workflows/iterate.py) records before the mask,
        never after it at the version the mask hands out. `for_restart`: the restart's
        mask-half, which holds that lock already (it commits the mask under it; taken twice,
        the flock would wait for itself) and starts its agent at the next version even when
        nothing is masked, so it leaves the mark all the same; a mask-half of the memory
        command or the editor that masks nothing changes nothing and leaves none (a question
        before it: mask_half_command's `asking`).
        """
        if not dry_run:
            from kernelscope.daemon.engine.workspace.atrex import refuse_if_supervised

            refuse_if_supervised(self.workspace, "mask half of the memory", allow_supervised)
        seed = secrets.randbits(32) if seed is None else seed
        with contextlib.ExitStack() as held:
            # a dry run writes nothing, not even the lock file (a workspace outside git keeps
            # it in memory/; there, where no iteration runs, no iteration lock is taken)
            if not dry_run and not for_restart and self.lock_dir != self.memory_dir:
                held.enter_context(iteration_lock(self.workspace))  # (the order: iteration, memory)
                # a running restart's agent was promised the next version: a mask now would
                # replace the restart's mark and hand that version out again
                refuse_if_restarting(self.workspace, "mask half of the memory")
            if not dry_run:
                held.enter_context(self._lock())
            entries = self.scan()
            corrupt = [e.version for e in entries if e.error]
            if corrupt and not force:
                raise DataError(
                    "refusing to mask-half with unreadable memory files: "
                    + "; ".join(e.error or "" for e in entries if e.error)
                    + " (fix them, or pass --force to skip them)"
                )
            best, rule = self.best_version(entries, kind)
            unmasked = [e for e in entries if e.ok and not e.masked and e.number != 0]
            # the seed keeps "the latest successful iteration (the current best version)": when
            # the two differ (a slower version that passed came last), both stay
            latest = next((e.version for e in reversed(unmasked) if e.record and e.record.gate_passed), None)
            candidates = [e.version for e in unmasked if e.version not in (best, latest)]
            count = len(candidates) // 2
            chosen = sorted(random.Random(seed).sample(candidates, count), key=parse_version)
            remaining = [e for e in entries if e.ok and not e.masked and e.version not in chosen]
            pitfall_target = remaining[-1].version if remaining else None
            result = MaskHalfResult(
                workspace=str(self.workspace),
                seed=seed,
                candidates=candidates,
                masked=chosen,
                best_version=best,
                best_metric=kind,
                best_rule=rule,
                latest_passing_version=latest,
                pitfall_recorded_in=pitfall_target if chosen else None,
                next_version=format_version(entries[-1].number + 1 if entries else 0),
                dry_run=dry_run,
                skipped_corrupt=corrupt,
            )
            if dry_run or not (chosen or for_restart):
                return result  # (nothing masked, no run started: nothing an iteration must know)
            writes = [note] if chosen and (note := self._record_restart(result, pitfall_target)) else []
            for version in chosen:
                path, data, indent = self._read_raw_for_update(version)
                data["masked"] = True
                writes.append((path, dump_json(data, indent)))
            # before the mask (a restart's even when empty: its next version goes to a fresh run
            # all the same): an iteration that finds the mark unchanged recorded before any of it
            put_back_mark = self._mark_mask_half(result, "restart" if for_restart else "mask-half")
            try:
                atomic_write_all(writes)  # a full disk half-way restores the files already written
            except PartlyWritten:
                raise  # (part of the mask stays: so does its mark)
            except WriteFailed:
                put_back_mark()  # nothing masked: an iteration measuring meanwhile records
                raise
        return result

    def mask_half_mark(self) -> dict[str, Any] | None:
        """The mark the latest mask-half left in the lock folder (seed, masked versions, the
        next version it handed out, when), or None. A mask-half starts a fresh run at its next
        version; an iteration that measured across one must not take that version: it reads
        the mark when it starts and again before it records (workflows/iterate.py)."""
        try:
            mark = load_json(workspace_files.read_text(self.lock_dir / MASK_HALF_MARK))
        except (OSError, ValueError):
            return None
        return mark if isinstance(mark, dict) else None

    def _mark_mask_half(self, result: MaskHalfResult, by: str) -> Callable[[], None]:
        """Written before the mask (a mark that cannot be written stops it: nothing masked), in
        git only: iterations need git, and outside it the lock folder is memory/, the records'
        own folder. Returns what puts back the mark found, for a mask that then fails with
        nothing masked (an iteration measuring meanwhile compares it with the one it read when
        it started); failing that (the disk still full), it removes the new one: no mark
        refuses no iteration."""
        if self.lock_dir == self.memory_dir:
            return lambda: None
        path = self.lock_dir / MASK_HALF_MARK
        try:
            found: bytes | None = workspace_files.read_bytes(path)
        except OSError:  # none (or one unreadable, which reads as none: mask_half_mark)
            found = None
        mark = {
            "seed": result.seed,
            "masked": result.masked,
            "next_version": result.next_version,
            "by": by,  # "restart" (an agent starts at next_version) or "mask-half"
            "at": utc_now_iso(),
            "id": secrets.token_hex(8),  # two of one seed in one second differ
        }
        atomic_write_text(path, json.dumps(mark) + "\n")

        def put_back() -> None:
            if not restore(path, found):
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)

        return put_back

    def _record_restart(self, result: MaskHalfResult, target: str | None) -> tuple[Path, str] | None:
        """The restart note added to the newest remaining version (path and new text)."""
        if target is None:
            return None
        path, data, indent = self._read_raw_for_update(target)
        pitfalls = data.get("pitfalls_and_fixes")
        if pitfalls is None:
            pitfalls = data["pitfalls_and_fixes"] = []
        if not isinstance(pitfalls, list):
            raise DataError(
                f"{path.name}: pitfalls_and_fixes is {type(pitfalls).__name__}, not a list; "
                "cannot record the partial restart (nothing was masked)"
            )
        now = utc_now_iso()
        pitfalls.append(
            {
                "error_type": "partial_restart",
                "error_message": f"Partial restart: masked {', '.join(result.masked)} "
                f"of {len(result.candidates)} candidates (seed {result.seed}) at {now}",
                "root_cause": "No new actionable optimization direction; masking half of the "
                "memory to break stale conclusions",
                "fix_applied": f"kernelscope memory mask-half --seed {result.seed}",
                "lesson": "Masked records are historical hints hidden from the active memory; "
                "unmask them to restore",
                "masked_versions": result.masked,
                "seed": result.seed,
                "best_version_kept": result.best_version,
                "latest_passing_kept": result.latest_passing_version,
                "timestamp": now,
            }
        )
        return path, dump_json(data, indent)
