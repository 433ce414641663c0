"""Warm benchmark workers: the daemon's fast path for background probes and benchmark
commands, and for local `kernelscope bench --candidates` batches.

A cold benchmark starts `python -m kernelscope.kernels.runner`, which imports torch and
triton before it measures anything. A warm worker (`python -m kernelscope.kernels.worker`,
one per interpreter and mode) has them imported already and forks a child per job that runs
the same `runner.main(argv)` (see kernels/worker.py for what the child does and why a fork).
The daemon's side is unchanged: `bench.run_child` supervises the job's child (its pid and
process group, reported by the worker) with the same timeout, caps, output file, line
follower and group kill as a cold runner; only how the child is started differs (`spawn`).

What can go wrong, and what happens:

- a job crashes, hangs, forks without end, hoards memory, prints without end or cheats: its
  child is killed and classified exactly as a cold runner's; the worker is not touched;
- the worker itself dies or stops answering mid-job (the kernel killed it, or the OOM killer, or
  a user): the job's group is killed and the job is run again cold (`bench._run_harness`), whose
  verdict is the result, with a note that the worker died; the next job starts a fresh worker;
- the worker cannot start (no torch in that interpreter, a GPU it cannot probe without a CUDA
  context...): the job runs cold, the reason is logged once per interpreter and mode, and the
  worker is tried again after `RETRY_AFTER_S`;
- the interpreter, the mode, the environment or the installed kernelscope (its source files)
  change: the old worker is stopped and a new one started; `WarmWorkers.stop_all()` is what
  the daemon calls when the user's interpreter or trust setting changes;
- the daemon exits: workers get EOF on their stdin and PR_SET_PDEATHSIG, and `close()`
  stops them on a clean exit; a worker idle for `IDLE_TIMEOUT_S` is stopped too.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine.run import child_limits
from kernelscope.daemon.engine.run.child_limits import ResourceLimits

log = logging.getLogger("kernelscope.bench")

WORKER_MODULE = "kernelscope.kernels.worker"
RUNNER_MODULE = "kernelscope.kernels.runner"
START_TIMEOUT_S = 120.0  # import torch + triton on a slow, loaded machine
JOB_START_TIMEOUT_S = 30.0  # a fork: anything longer is a wedged worker
REAP_TIMEOUT_S = 60.0  # after the job's group was killed, for the worker to report its end
RETRY_AFTER_S = 300.0  # a worker that could not start is tried again after this
IDLE_TIMEOUT_S = 600.0  # an idle worker (~torch's import in memory) is stopped after this
TITLE_SPACE = 4096  # room in the worker's argv for a job's command line (ps, /proc/PID/cmdline)
# Variables that differ from job to job and do not matter before a job starts: not part of
# a worker's identity (CUDA_VISIBLE_DEVICES is read when the job's child first uses CUDA).
PER_JOB_VARIABLES = frozenset({"PWD", "OLDPWD", "CUDA_VISIBLE_DEVICES"})
CACHE_VARIABLES = ("TRITON_CACHE_DIR", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR", "TORCHINDUCTOR_CACHE_DIR")


class WorkerUnavailable(Exception):
    """A worker could not be started; the job runs cold."""


class WorkerLost(Exception):
    """The worker died or stopped answering before the job's child existed."""


@dataclass(frozen=True)
class WorkerKey:
    python: str
    mode: str  # auto | gpu | interpreter, as asked (the worker resolves auto)
    env_digest: str

    def describe(self) -> str:
        return f"{self.python} (mode {self.mode})"


def worker_mode(mode: str, env: Mapping[str, str]) -> str:
    return "interpreter" if mode == "interpreter" or env.get("TRITON_INTERPRET") == "1" else mode


def env_digest(env: Mapping[str, str]) -> str:
    items = sorted((k, v) for k, v in env.items() if k not in PER_JOB_VARIABLES)
    return hashlib.sha256(json.dumps(items).encode()).hexdigest()[:16]


def _sources_fingerprint(sources: list[str]) -> tuple[tuple[str, int, int], ...]:
    """(path, mtime_ns, size) of the harness's source files the worker imported: an upgraded
    or edited kernelscope changes them, and the worker must not serve the old code."""
    found = []
    for directory in sources:
        with contextlib.suppress(OSError):
            for entry in os.scandir(directory):
                if entry.name.endswith(".py"):
                    with contextlib.suppress(OSError):
                        stat = entry.stat()
                        found.append((entry.path, stat.st_mtime_ns, stat.st_size))
    return tuple(sorted(found))


def rlimits_for(limits: ResourceLimits) -> dict[str, int | None]:
    """The rlimits `child_limits.apply_to` sets from the parent, for the job's child to set on
    itself before any job code runs (the daemon applies them again once it has the pid)."""
    hard = child_limits.HARD_FILE_SIZE_MB * 1024 * 1024
    if limits.max_output_mb:
        hard = max(hard, limits.max_output_mb * 4 * 1024 * 1024)
    nproc = None
    if limits.max_processes and os.getuid() != 0:  # root ignores RLIMIT_NPROC
        with contextlib.suppress(OSError):
            running = sum(1 for entry in os.scandir("/proc") if entry.name.isdigit())
            nproc = running + limits.max_processes
    return {"fsize": hard, "nproc": nproc}


# PR_SET_PDEATHSIG fires when the *thread* that started the worker exits, not the process:
# workers are started from this one long-lived thread, never from a short-lived pool thread.
_spawner: ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def _on_stable_thread(function: Any) -> Any:
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernelscope-worker-start")
        pool = _spawner
    return pool.submit(function).result()


class WarmWorker:
    """One worker process and its control channel. Used by one job at a time."""

    def __init__(
        self, key: WorkerKey, env: Mapping[str, str], start_timeout_s: float = START_TIMEOUT_S
    ) -> None:
        self.key = key
        self.dir = Path(tempfile.mkdtemp(prefix="kernelscope-worker-"))
        self.stderr_path = self.dir / "worker.log"
        self.buffer = b""
        self.jobs = 0
        self.broken: str | None = None  # why it must not be reused
        self.idle_since = time.monotonic()
        self.generation = 0
        self._ids = itertools.count(1)
        argv = [
            key.python,
            "-m",
            WORKER_MODULE,
            "--mode",
            key.mode,
            "--daemon-pid",
            str(os.getpid()),
            "--title-space",
            " " * TITLE_SPACE,
        ]
        # (CUDA_VISIBLE_DEVICES as the first job has it: the worker's NVML check sees a GPU
        # that job can use; each job's child still gets its own value)
        worker_env = {k: v for k, v in env.items() if k not in ("PWD", "OLDPWD")}
        worker_env["PYTHONDONTWRITEBYTECODE"] = "1"
        started = time.monotonic()
        try:
            with self.stderr_path.open("wb") as stderr:
                self.process = _on_stable_thread(
                    lambda: subprocess.Popen(
                        argv,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=stderr,
                        cwd=self.dir,
                        env=worker_env,
                        start_new_session=True,
                    )
                )
        except OSError as exc:
            self._remove_dir()
            raise WorkerUnavailable(f"{key.python} could not start: {exc}") from None
        self.pid = self.process.pid
        try:
            ready = self.receive(start_timeout_s)
        except TimeoutError:
            self.close()
            raise WorkerUnavailable(f"no answer within {start_timeout_s:g} s") from None
        if ready is None or not ready.get("ready"):
            reason = (ready or {}).get("reason") or f"it exited: {self.stderr_tail()[-800:]!r}"
            self.close()
            raise WorkerUnavailable(str(reason))
        self.mode = str(ready.get("mode"))
        self.version = ready.get("version")
        self.sources = [str(s) for s in ready.get("sources") or []]
        self.facts = ready
        self.fingerprint = _sources_fingerprint(self.sources)
        self.start_s = time.monotonic() - started

    # -- the channel ---------------------------------------------------------------------

    def receive(self, timeout: float | None) -> dict[str, Any] | None:
        """The worker's next message; None when it closed its end (died); TimeoutError."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            return self.receive(timeout)
        return message if isinstance(message, dict) else self.receive(timeout)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    # -- state -------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.broken is None and self.process.poll() is None

    def stale(self) -> bool:
        """kernelscope's harness files changed since the worker imported them."""
        return _sources_fingerprint(self.sources) != self.fingerprint

    def stderr_tail(self, size: int = 4000) -> str:
        with contextlib.suppress(OSError), self.stderr_path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - size))
            return handle.read().decode("utf-8", errors="replace")
        return ""

    def lost(self, what: str) -> str:
        """Mark the worker unusable, make sure it is gone, and say what happened."""
        if self.broken is None:
            self.broken = what
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        status = self.process.returncode
        how = (
            f"killed by {signal.Signals(-status).name}"
            if status is not None and status < 0 and -status in signal.valid_signals()
            else f"exit status {status}"
        )
        tail = self.stderr_tail(600).strip()
        return f"the warm benchmark worker (pid {self.pid}) {what} ({how})" + (f": {tail}" if tail else "")

    # -- jobs --------------------------------------------------------------------------

    def spawn(
        self, argv: list[str], cwd: Path, env: Mapping[str, str], log_path: Path, limits: ResourceLimits
    ) -> WorkerJob:
        """Start the runner command `argv` (`python -m kernelscope.kernels.runner ...`) as a
        forked child of the worker; the handle behaves like the Popen of a cold run."""
        if argv[1:3] != ["-m", RUNNER_MODULE]:
            raise ValueError(f"a warm worker runs the benchmark runner only, not {argv[:3]}")
        job_id = str(next(self._ids))
        self.jobs += 1
        try:
            self.send(
                {
                    "job": job_id,
                    "argv": list(argv[3:]),
                    "cwd": str(cwd),
                    "env": dict(env),
                    "log": str(log_path),
                    "title": list(argv),
                    "rlimits": rlimits_for(limits),
                }
            )
            message = self.receive(JOB_START_TIMEOUT_S)
        except (OSError, ValueError):  # a broken pipe: the worker is gone
            raise WorkerLost(self.lost("was gone before the job started")) from None
        except TimeoutError:
            raise WorkerLost(self.lost(f"did not start the job within {JOB_START_TIMEOUT_S:g} s")) from None
        if message is None:
            raise WorkerLost(self.lost("died before the job started"))
        if message.get("started") != job_id or not isinstance(message.get("pid"), int):
            raise WorkerLost(self.lost(f"answered {str(message)[:200]} to a job"))
        return WorkerJob(self, job_id, int(message["pid"]))

    def close(self) -> None:
        """Stop the worker: EOF first (it exits between jobs), then SIGKILL to its group."""
        with contextlib.suppress(OSError, ValueError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
        with contextlib.suppress(OSError, ValueError):
            if self.process.stdout is not None:
                self.process.stdout.close()
        self.broken = self.broken or "closed"
        self._remove_dir()

    def _remove_dir(self) -> None:
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)


class WorkerJob:
    """A job's child seen through its worker: `pid` (its process group and session),
    `wait(timeout)` and `returncode` as `subprocess.Popen` has them, plus `worker_error` when
    the worker died or stopped answering (then `returncode` stays None)."""

    def __init__(self, worker: WarmWorker, job_id: str, pid: int) -> None:
        self.worker, self.job_id, self.pid = worker, job_id, pid
        self.returncode: int | None = None
        self.worker_error: str | None = None
        self.done = False

    def poll(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.wait(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if self.done:
            return self.returncode
        limit = REAP_TIMEOUT_S if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            try:
                message = self.worker.receive(max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                if timeout is not None:
                    raise subprocess.TimeoutExpired("warm worker job", timeout) from None
                self.worker_error = self.worker.lost(
                    f"did not report the end of job {self.job_id} within {REAP_TIMEOUT_S:g} s"
                )
                self.done = True
                return None
            if message is None:
                self.worker_error = self.worker.lost("died while running this job")
                self.done = True
                return None
            if message.get("exited") == self.job_id:
                code = message.get("returncode")
                self.returncode = int(code) if isinstance(code, int) else 1
                self.done = True
                return self.returncode


class WarmWorkers:
    """Warm workers by (interpreter, mode, environment); one job per worker at a time.

    `acquire` hands out an idle worker with the job's key (or starts one), `release` takes it
    back. None from `acquire` means: run this job cold (the reason was logged once)."""

    def __init__(
        self,
        max_idle: int = 2,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.max_idle = max_idle
        self.idle_timeout_s = idle_timeout_s
        self.start_timeout_s = start_timeout_s
        self.lock = threading.Lock()
        self.idle: list[WarmWorker] = []
        self.busy: set[WarmWorker] = set()
        self.failed: dict[WorkerKey, float] = {}
        self.logged: set[WorkerKey] = set()
        self.generation = 0
        self.closed = False
        self.started = 0  # workers started over this pool's life
        self.cache_dir = Path(tempfile.mkdtemp(prefix="kernelscope-worker-cache-"))
        self._timer: threading.Timer | None = None

    def job_env(self, env: Mapping[str, str], scratch_cache: Path | None) -> dict[str, str]:
        """A cache directory the scratch copy moved into its own folder (because the workspace
        is $HOME, say) becomes this pool's: Triton's compile cache is shared between jobs."""
        fixed = dict(env)
        if scratch_cache is not None:
            prefix = str(scratch_cache)
            for name in CACHE_VARIABLES:
                value = fixed.get(name)
                if value and (value == prefix or value.startswith(prefix + os.sep)):
                    fixed[name] = str(self.cache_dir / name.lower())
        return fixed

    def acquire(self, python: str, mode: str, env: Mapping[str, str]) -> WarmWorker | None:
        key = WorkerKey(str(python), worker_mode(mode, env), env_digest(env))
        retire: list[WarmWorker] = []
        found: WarmWorker | None = None
        with self.lock:
            if self.closed:
                return None
            failed_at = self.failed.get(key)
            if failed_at is not None and time.monotonic() - failed_at < RETRY_AFTER_S:
                return None
            for worker in list(self.idle):
                if (
                    not worker.alive()
                    or worker.key.python != key.python
                    or worker.key.env_digest != key.env_digest
                ):
                    self.idle.remove(worker)  # dead, or another interpreter or environment: superseded
                    retire.append(worker)
                elif found is None and worker.key == key:
                    self.idle.remove(worker)
                    found = worker
            if found is not None:
                self.busy.add(found)
        for worker in retire:
            worker.close()
        if found is not None and found.stale():
            log.info("kernelscope's harness changed on disk: restarting the warm benchmark worker")
            self._discard(found)
            found = None
        if found is not None:
            return found
        try:
            worker = WarmWorker(key, env, self.start_timeout_s)
        except WorkerUnavailable as exc:
            with self.lock:
                self.failed[key] = time.monotonic()
                first = key not in self.logged
                self.logged.add(key)
            if first:
                log.warning(
                    "no warm benchmark worker for %s (%s): benchmarks start a fresh process each time",
                    key.describe(),
                    exc,
                )
            return None
        with self.lock:
            self.failed.pop(key, None)
            self.started += 1
            worker.generation = self.generation
            if self.closed:
                worker.close()
                return None
            self.busy.add(worker)
        log.info(
            "warm benchmark worker pid %d started for %s in %.2f s (%s)",
            worker.pid,
            key.describe(),
            worker.start_s,
            worker.mode,
        )
        return worker

    def _discard(self, worker: WarmWorker) -> None:
        with self.lock:
            self.busy.discard(worker)
        worker.close()

    def release(self, worker: WarmWorker) -> None:
        keep = worker.alive() and not self.closed and worker.generation == self.generation
        surplus: list[WarmWorker] = []
        with self.lock:
            self.busy.discard(worker)
            if keep:
                worker.idle_since = time.monotonic()
                self.idle.append(worker)
                while len(self.idle) > self.max_idle:
                    surplus.append(self.idle.pop(0))
        if not keep:
            # (closed: the pool killed it, and no next job comes: a second Ctrl-C, an exit)
            if worker.broken and worker.broken != "closed" and not self.closed:
                log.warning(
                    "warm benchmark worker pid %d lost (%s): the next job starts a new one",
                    worker.pid,
                    worker.broken,
                )
            worker.close()
        for extra in surplus:
            extra.close()
        if keep:
            self._schedule_reap()

    def _schedule_reap(self) -> None:
        timer = threading.Timer(self.idle_timeout_s + 1.0, self.reap_idle)
        timer.daemon = True
        with self.lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = timer
        timer.start()

    def reap_idle(self) -> None:
        """Stop workers idle for longer than `idle_timeout_s` (they hold torch in memory)."""
        now = time.monotonic()
        with self.lock:
            old = [w for w in self.idle if now - w.idle_since >= self.idle_timeout_s]
            self.idle = [w for w in self.idle if w not in old]
        for worker in old:
            worker.close()

    def stop_all(self) -> None:
        """Stop idle workers now and busy ones when their job ends (the user's interpreter or
        trust setting changed: nothing started under the old settings keeps running)."""
        with self.lock:
            self.generation += 1
            idle, self.idle = self.idle, []
            self.failed.clear()
        for worker in idle:
            worker.close()

    def close(self) -> None:
        """Stop every worker, busy ones included (the daemon is exiting)."""
        with self.lock:
            self.closed = True
            workers = [*self.idle, *self.busy]
            self.idle, self.busy = [], set()
            if self._timer is not None:
                self._timer.cancel()
        for worker in workers:
            with contextlib.suppress(OSError):
                os.killpg(worker.pid, signal.SIGTERM)  # it kills its running job first
            worker.close()
        import shutil

        shutil.rmtree(self.cache_dir, ignore_errors=True)

    def pids(self) -> list[int]:
        with self.lock:
            return [w.pid for w in [*self.idle, *self.busy] if w.process.poll() is None]
