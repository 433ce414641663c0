"""Resource caps for the processes kernelscope starts to run user code (benchmarks, gates).

A kernel under test is arbitrary code: it may allocate without bound, fork in a loop or print
gigabytes. The daemon runs for days, so such a child must be stopped before it takes the
machine (and the daemon with it). Three mechanisms, cheapest first:

- rlimits set on the child right after it starts: RLIMIT_FSIZE (no file the child writes,
  its captured output included, grows past a hard cap: SIGXFSZ, or EFBIG in programs such as
  Python that ignore that signal) and, for users other than root, RLIMIT_NPROC (fork fails
  once the user has too many processes);
- a watchdog in the parent that samples the child's whole process group from /proc a few
  times a second: resident memory (RSS, not address space: CUDA reserves terabytes of
  virtual memory, so RLIMIT_AS would break every GPU run), process count and output size;
- killing the group with SIGKILL until it is empty (a fork bomb's new children are in it).

psutil has no process-group query (children() misses a grandchild whose parent died), so the
sampler reads /proc itself; on systems without /proc only the rlimits and the timeout apply.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_PROCESSES = 256
DEFAULT_MAX_OUTPUT_MB = 64
HARD_FILE_SIZE_MB = 1024  # backstop for any single file the child writes
_PROC = Path("/proc")


def default_memory_limit_mb() -> int | None:
    """Half of physical memory: a runaway kernel is stopped while the editor still runs."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return max(256, total // 2 // (1024 * 1024))


@dataclass(frozen=True)
class ResourceLimits:
    """Caps for one child. None (or 0) switches a cap off."""

    memory_mb: int | None = None  # resident memory of the whole process group
    max_processes: int | None = DEFAULT_MAX_PROCESSES
    max_output_mb: int | None = DEFAULT_MAX_OUTPUT_MB

    @classmethod
    def for_benchmark(cls, memory_limit_mb: int | None) -> ResourceLimits:
        """None means the default cap (half of RAM); 0 means no memory cap."""
        memory = default_memory_limit_mb() if memory_limit_mb is None else (memory_limit_mb or None)
        return cls(memory_mb=memory)


@dataclass(frozen=True)
class GroupUsage:
    processes: int
    rss_mb: float


def stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name: state, ppid, pgrp, session, ... (see proc(5));
    None when the process is gone or there is no /proc."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces or ')'.
    return raw[raw.rfind(b")") + 2 :].decode("ascii", errors="replace").split()


def _in_group(group: int) -> Iterator[tuple[int, list[str]]]:
    """(pid, stat fields) of every process in `group`'s process group or session (a child
    that calls setpgid stays in the session), zombies included."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(_PROC):
            if not entry.name.isdigit():
                continue
            fields = stat_fields(int(entry.name))
            if fields and len(fields) >= 22 and group in (int(fields[2]), int(fields[3])):
                yield int(entry.name), fields


_PAGE_MB = (os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096) / (1024 * 1024)


def _pss_mb(pid: int) -> float | None:
    """Proportional set size: pages shared by forked children counted once, not per child."""
    try:
        for line in (_PROC / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def group_usage(group: int, exact_above_mb: float | None = None) -> GroupUsage | None:
    """Live processes and resident memory of every process in `group`'s process group or
    session (a child that calls setpgid stays in the session). None without /proc.

    RSS counts a page shared by forked children once per child, so when the RSS sum passes
    `exact_above_mb` the memory is recomputed from PSS (slower, and only needed then)."""
    if not _PROC.is_dir():
        return None
    live = [(pid, fields) for pid, fields in _in_group(group) if fields[0] not in ("Z", "X")]
    pids = [pid for pid, _ in live]
    pages = sum(int(fields[21]) for _, fields in live)
    rss_mb = pages * _PAGE_MB
    if exact_above_mb is not None and rss_mb > exact_above_mb:
        pss = [_pss_mb(pid) for pid in pids]
        if all(value is not None for value in pss):
            rss_mb = sum(value for value in pss if value is not None)
    return GroupUsage(len(pids), rss_mb)


def members(group: int) -> list[int]:
    """Pids in `group`'s process group or session (zombies included: they still need a kill
    of their parent to go away)."""
    return [pid for pid, _ in _in_group(group)] if _PROC.is_dir() else []


def kill_group(group: int, rounds: int = 50) -> None:
    """SIGKILL the group (and stragglers that moved to their own group inside the session)
    until nothing of it is left alive or `rounds` passes are done."""
    for _ in range(rounds):
        alive = False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
            alive = True
        for pid in members(group):
            if pid == os.getpid():
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                alive = True
        if not alive:
            return


def over_limit(limits: ResourceLimits, group: int, output: Path | None) -> str | None:
    """Which cap the group has gone past, as a sentence; None while it is within all of them."""
    if limits.max_output_mb and output is not None:
        with contextlib.suppress(OSError):
            size_mb = output.stat().st_size / (1024 * 1024)
            if size_mb > limits.max_output_mb:
                return f"printed more than {limits.max_output_mb} MB of output"
    if not (limits.memory_mb or limits.max_processes):
        return None
    usage = group_usage(group, exact_above_mb=limits.memory_mb)
    if usage is None:
        return None
    if limits.max_processes and usage.processes > limits.max_processes:
        return f"started more than {limits.max_processes} processes ({usage.processes} alive)"
    if limits.memory_mb and usage.rss_mb > limits.memory_mb:
        return f"used {usage.rss_mb:.0f} MB of resident memory, over the {limits.memory_mb} MB cap"
    return None


def apply_to(pid: int, limits: ResourceLimits) -> None:
    """Set the rlimits on a just-started child with prlimit(2), from the parent: a preexec_fn
    would run Python between fork and exec, which can deadlock in the threaded daemon. The
    child inherits them into everything it forks. Linux only; elsewhere the watchdog acts."""
    prlimit = getattr(resource, "prlimit", None)
    if prlimit is None:
        return
    hard = HARD_FILE_SIZE_MB * 1024 * 1024
    if limits.max_output_mb:
        hard = max(hard, limits.max_output_mb * 4 * 1024 * 1024)
    with contextlib.suppress(ValueError, OSError):
        prlimit(pid, resource.RLIMIT_FSIZE, (hard, hard))
    if limits.max_processes and os.getuid() != 0:  # root ignores RLIMIT_NPROC
        with contextlib.suppress(ValueError, OSError):
            running = sum(1 for entry in os.scandir(_PROC) if entry.name.isdigit()) if _PROC.is_dir() else 0
            cap = running + limits.max_processes
            prlimit(pid, resource.RLIMIT_NPROC, (cap, cap))
