"""Where benchmark jobs run: on this machine (the default) or on a Ray cluster.

Ray is the engine a team with several GPU machines already runs, so kernelscope schedules on
it instead of growing a scheduler of its own. It stays optional: nothing imports `ray` unless
the Ray executor is asked for (`pip install kernelscope[ray]`).

Both executors take `BenchRequest`s and return one `BenchResult` per request, in order, with
failures (a task error, a dead worker, a timeout) as structured failures of that request
only. Each request is submitted once and never retried, so nothing is measured or recorded
twice.

The local executor runs a batch of several candidates through warm benchmark workers
(`warm_worker`: torch and triton imported once per slot, each candidate in a forked child with
the cold path's isolation), stopped when the batch ends; a single request runs cold.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Protocol

from kernelscope.daemon.engine import DataError, UsageError
from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
from kernelscope.daemon.engine.run.run_mode import expected_mode
from kernelscope.daemon.engine.run.warm_worker import WarmWorkers
from kernelscope.protocol.bench import BenchError, BenchResult

OnResult = Callable[[int, BenchResult], None]


class Executor(Protocol):
    def run_many(
        self,
        requests: list[BenchRequest],
        on_result: OnResult | None = None,
        cancel: threading.Event | None = None,
    ) -> list[BenchResult]: ...


def failure_result(request: BenchRequest, kind: str, message: str) -> BenchResult:
    """A request's result where no runner gave one (a Ray task lost or cancelled, a job a
    Ctrl-C stopped before it finished): a structured failure of that request only, in the
    mode its run would have had (`auto`, the CLI's default, is the GPU on a GPU machine)."""
    return BenchResult(
        status="error",
        passed=False,
        mode=expected_mode(request.mode, {**os.environ, **(request.env or {})}),  # type: ignore[arg-type]
        workspace=str(request.workspace),
        candidate=str(request.candidate),
        baseline=str(request.baseline or "reference"),
        entry_point=str(request.entry or "kernel_fn"),
        error=BenchError(kind=kind, message=message),  # type: ignore[arg-type]
    )


def local_gpu_count() -> int:
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        listing = subprocess.run(
            ["nvidia-smi", "-L"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in listing.splitlines() if line.startswith("GPU "))


class LocalExecutor:
    """Subprocesses on this machine: one job per GPU at a time (each pinned with
    CUDA_VISIBLE_DEVICES), or `slots` jobs at a time on CPUs (default 1). A batch of more than
    one request runs through warm workers (`workers`, or a pool of its own for the batch)."""

    def __init__(self, slots: int | None = None, workers: WarmWorkers | None = None) -> None:
        self.gpus = local_gpu_count()
        self.slots = slots or max(1, self.gpus)
        self.workers = workers

    def run_many(
        self,
        requests: list[BenchRequest],
        on_result: OnResult | None = None,
        cancel: threading.Event | None = None,
    ) -> list[BenchResult]:
        free = list(range(self.slots))
        lock = threading.Lock()
        cancel = cancel or threading.Event()
        own = self.workers is None and len(requests) > 1
        workers = WarmWorkers(max_idle=self.slots) if own else self.workers

        def run(index: int) -> BenchResult:
            with lock:
                slot = free.pop()
            try:
                result = _run_pinned(requests[index], slot if self.gpus else None, cancel, workers)
            finally:
                with lock:
                    free.append(slot)
            if on_result:
                on_result(index, result)
            return result

        try:
            with ThreadPoolExecutor(max_workers=self.slots) as pool:
                try:
                    return list(pool.map(run, range(len(requests))))
                except BaseException:
                    # Ctrl-C or SIGTERM (SystemExit) while jobs run: the pool's exit waits for
                    # them, so they are cancelled (their runners killed), not waited out to
                    # their timeouts; the jobs not started yet are dropped
                    cancel.set()
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
        finally:
            if own and workers is not None:
                workers.close()


def _run_pinned(
    request: BenchRequest,
    gpu: int | None,
    cancel: threading.Event | None,
    workers: WarmWorkers | None = None,
) -> BenchResult:
    if gpu is not None:  # the runner (a cold process or a worker's forked child) sees only its GPU
        request = replace(request, env={**(request.env or {}), "CUDA_VISIBLE_DEVICES": str(gpu)})
    return run_benchmark(request, cancel=cancel, workers=workers)


def _request_to_dict(request: BenchRequest) -> dict[str, Any]:
    data = asdict(request)
    data.pop("on_progress", None)
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in data.items()}


def _ray_task(data: dict[str, Any]) -> str:
    """Runs on a Ray worker: the same harness runner, in the worker's Python environment."""
    import sys

    from kernelscope.daemon.engine.run.bench import BenchRequest as Request
    from kernelscope.daemon.engine.run.bench import run_benchmark as run

    fields = dict(data)
    for key in ("workspace", "candidate", "reference", "parent"):
        if fields.get(key):
            fields[key] = Path(fields[key])
    fields["python"] = fields.get("python") or sys.executable
    result = run(Request(**fields))
    import socket

    result.messages.append(f"ran on a Ray worker on {socket.gethostname()}")
    return result.model_dump_json()


class RayExecutor:
    """One Ray task per candidate (its configurations form one group), each asking for one GPU
    (or one CPU in interpreter mode), run by the same harness on the worker."""

    def __init__(
        self, address: str | None = None, timeout_s: float | None = None, **init_kwargs: Any
    ) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError("the Ray executor needs ray: pip install 'kernelscope[ray]'") from None
        self.ray = ray
        self.timeout_s = timeout_s
        if not ray.is_initialized():
            try:
                ray.init(
                    address=address,
                    ignore_reinit_error=True,
                    include_dashboard=False,
                    log_to_driver=False,
                    **init_kwargs,
                )
            except (OSError, ValueError, RuntimeError) as exc:  # no cluster there, a bad address
                where = f"the Ray cluster at {address}" if address else "a local Ray"
                raise DataError(
                    f"cannot start or join {where}: {exc} (check --address, or leave it out to run "
                    "on a local Ray); nothing was measured"
                ) from None

    def run_many(
        self,
        requests: list[BenchRequest],
        on_result: OnResult | None = None,
        cancel: threading.Event | None = None,
    ) -> list[BenchResult]:
        ray = self.ray
        results: list[BenchResult | None] = [None] * len(requests)
        refs: dict[Any, int] = {}
        pending: list[Any] = []  # submitted and not collected yet
        cluster_gpus = ray.cluster_resources().get("GPU", 0)
        deadline_s = self.timeout_s or max((r.timeout_s for r in requests), default=900.0) + 60.0
        import time

        try:
            for index, request in enumerate(requests):
                # one GPU per task when the cluster has GPUs (mode auto) or the user asks for them
                gpus = 1 if request.mode == "gpu" or (request.mode == "auto" and cluster_gpus > 0) else 0
                task = ray.remote(num_gpus=gpus, num_cpus=1, max_retries=0)(_ray_task)
                ref = task.remote(_request_to_dict(request))
                refs[ref] = index
                pending.append(ref)
            deadline = time.monotonic() + deadline_s
            while pending:
                if cancel is not None and cancel.is_set():
                    for ref in pending:
                        ray.cancel(ref, force=True)
                        results[refs[ref]] = failure_result(
                            requests[refs[ref]], "interrupted", "the Ray task was cancelled"
                        )
                    break
                done, pending = ray.wait(
                    pending, num_returns=1, timeout=max(0.1, min(1.0, deadline - time.monotonic()))
                )
                for ref in done:
                    index = refs[ref]
                    results[index] = self._collect(ref, requests[index])
                    if on_result:
                        on_result(index, results[index])  # type: ignore[arg-type]
                if pending and time.monotonic() > deadline:
                    for ref in pending:
                        ray.cancel(ref, force=True)
                        index = refs[ref]
                        results[index] = failure_result(
                            requests[index], "timeout", f"the Ray task did not finish within {deadline_s:g} s"
                        )
                    break
        except KeyboardInterrupt:
            # a Ctrl-C (in ray.wait, mostly): the tasks submitted and not collected would run on
            # in the cluster, holding its GPUs for a run nobody waits for; the caller keeps what
            # finished (on_result) and reports the rest as interrupted
            if cancel is not None:
                cancel.set()
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        return [
            r if r is not None else failure_result(requests[i], "exception", "no result")
            for i, r in enumerate(results)
        ]

    def _collect(self, ref: Any, request: BenchRequest) -> BenchResult:
        ray = self.ray
        try:
            return BenchResult.model_validate_json(ray.get(ref))
        except ray.exceptions.WorkerCrashedError as exc:
            return failure_result(request, "crash", f"the Ray worker died while benchmarking: {exc}")
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if cause is not None and "died" in str(cause).lower():
                return failure_result(request, "crash", f"the Ray worker died while benchmarking: {cause}")
            return failure_result(request, "exception", f"the Ray task failed: {cause or exc}")
        except ray.exceptions.RayError as exc:  # actor/node lost, object lost, ...
            return failure_result(request, "crash", f"Ray could not run the task: {exc}")


def make_executor(kind: str, address: str | None = None) -> Executor:
    if kind == "local":
        return LocalExecutor()
    if kind == "ray":
        return RayExecutor(address)
    raise UsageError(f"unknown executor {kind!r}: use local or ray")
