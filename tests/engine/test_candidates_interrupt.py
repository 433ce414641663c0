"""A Ctrl-C during `bench --candidates`, at the fan-out (engine/run/fanout.py) and the executors:
what finished keeps its verdict, whatever the moment the interrupt came. The executor here is
a stand-in that delivers results in a set order around the interrupt (the local executor's
order: the cancel event is set, then the jobs still running report while the pool winds down),
so each window a review found is hit every time; tests/cli/test_cli_interrupt.py sends the real
SIGINT to the CLI."""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernelscope.daemon.engine.run import run_mode
from kernelscope.daemon.engine.run.bench import BenchRequest
from kernelscope.daemon.engine.run.executors import OnResult, failure_result
from kernelscope.daemon.engine.run.fanout import bench_candidates
from kernelscope.daemon.engine.run.warm_worker import WarmWorkers
from kernelscope.protocol.bench import BenchError, BenchResult, exit_status, verdict_word


def ok(request: BenchRequest) -> BenchResult:
    return BenchResult(
        status="ok",
        passed=True,
        mode="interpreter",
        workspace=str(request.workspace),
        candidate=str(request.candidate),
        baseline="reference",
        entry_point="kernel_fn",
        comparable=False,
    )


def wrong(request: BenchRequest) -> BenchResult:
    result = ok(request).model_copy(update={"status": "gate_failed", "passed": False})
    result.error = BenchError(kind="wrong_result", message="output mismatch")
    return result


class CtrlC:
    """Runs nothing: `before` results arrive, then the interrupt (the cancel event is set),
    then `after` results (jobs that ended while the pool wound down), then KeyboardInterrupt
    leaves run_many, as a Ctrl-C in the local executor's wait does."""

    def __init__(self, before: dict[int, Any], after: dict[int, Any]) -> None:
        self.before, self.after = before, after

    def run_many(
        self,
        requests: list[BenchRequest],
        on_result: OnResult | None = None,
        cancel: threading.Event | None = None,
    ) -> list[BenchResult]:
        assert on_result is not None and cancel is not None
        for index, make in self.before.items():
            on_result(index, make(requests[index]))
        cancel.set()
        for index, make in self.after.items():
            on_result(index, make(requests[index]))
        raise KeyboardInterrupt


def cancelled(request: BenchRequest) -> BenchResult:
    return failure_result(request, "interrupted", "the benchmark was cancelled")


def run(tmp_path: Path, executor: Any, names: list[str], groups: int = 1) -> dict[str, BenchResult]:
    template = BenchRequest(workspace=tmp_path, mode="interpreter")
    report = bench_candidates(template, [tmp_path / n for n in names], executor, "local", groups)
    run.messages = report.messages  # type: ignore[attr-defined]
    return {Path(r.candidate).name: r.result for r in report.ranking}


def test_a_candidate_that_finished_as_the_ctrl_c_came_keeps_its_verdict(tmp_path: Path) -> None:
    """a.py's runner had ended when the Ctrl-C came; its result reached on_result after the
    cancel event was set (0.03-0.09 s after the runner's exit): it was dropped as interrupted."""
    by_name = run(tmp_path, CtrlC(before={}, after={0: ok, 1: cancelled}), ["a.py", "b.py"])
    assert by_name["a.py"].passed, by_name["a.py"].error
    assert verdict_word(by_name["b.py"]) == "STOPPED" and by_name["b.py"].error.kind == "interrupted"  # type: ignore[union-attr]
    assert run.messages[0].startswith("interrupted (Ctrl-C): 1 of 2 candidates did not finish")  # type: ignore[attr-defined]


def test_a_worker_death_after_the_ctrl_c_is_no_verdict(tmp_path: Path) -> None:
    """A second Ctrl-C closes the warm workers under the running jobs: their `worker` results
    are the interrupt's doing, so the candidate is interrupted (no verdict either way)."""

    def worker(request: BenchRequest) -> BenchResult:
        return failure_result(request, "worker", "warm benchmark worker pid 1 died while running this job")

    by_name = run(tmp_path, CtrlC(before={0: ok}, after={1: worker}), ["a.py", "b.py"])
    assert by_name["a.py"].passed and by_name["b.py"].error.kind == "interrupted"  # type: ignore[union-attr]


@pytest.mark.parametrize("started", [True, False])
def test_when_no_candidate_finished_there_are_no_others(tmp_path: Path, started: bool) -> None:
    after = {0: cancelled, 1: cancelled} if started else {}
    by_name = run(tmp_path, CtrlC(before={}, after=after), ["a.py", "b.py"])
    assert all(r.error.kind == "interrupted" for r in by_name.values())  # type: ignore[union-attr]
    assert run.messages[0] == (  # type: ignore[attr-defined]
        "interrupted (Ctrl-C): 2 of 2 candidates did not finish (kind interrupted, no verdict)"
    )


def test_a_finished_group_that_failed_is_the_candidate_s_verdict(tmp_path: Path) -> None:
    """--config-groups 2: a.py's group 0 failed and group 1 was stopped; the failure is a
    verdict no other group can undo. b.py's group 0 passed and group 1 was stopped: nothing
    was decided. (Requests in order: a/0, a/1, b/0, b/1.)"""
    by_name = run(tmp_path, CtrlC(before={0: wrong, 2: ok}, after={1: cancelled}), ["a.py", "b.py"], 2)
    a, b = by_name["a.py"], by_name["b.py"]
    assert verdict_word(a) == "FAIL" and a.error.kind == "wrong_result" and exit_status(a) == 3, a  # type: ignore[union-attr]
    assert "configuration group 0/2 failed; a Ctrl-C stopped configuration group 1/2 unfinished" in a.messages
    assert b.error.kind == "interrupted" and b.mode == "interpreter", b  # type: ignore[union-attr]
    assert run.messages[0] == (  # type: ignore[attr-defined]
        "interrupted (Ctrl-C): 1 of 2 candidates did not finish (kind interrupted, no verdict); "
        "1 of 2 candidates failed in a configuration group that finished (its other groups were stopped)"
    )


def test_an_interrupted_run_under_auto_says_the_mode_it_would_have_run_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's default --mode auto on a GPU machine: a stopped candidate said `interpreter`."""
    monkeypatch.setattr(run_mode, "gpu_device_present", lambda: True)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    request = BenchRequest(workspace=tmp_path, candidate=tmp_path / "a.py", mode="auto")
    assert failure_result(request, "interrupted", "stopped").mode == "gpu"
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # as the runner would run it: the interpreter
    assert failure_result(request, "interrupted", "stopped").mode == "interpreter"


class Ref:
    """A task's object reference (hashable, as ray's are)."""

    def __init__(self, number: int, data: dict[str, Any]) -> None:
        self.number, self.data = number, data


class FakeRay:
    """Enough of `ray` for RayExecutor: task 0 finishes first, then a Ctrl-C arrives in
    ray.wait while the other tasks are pending."""

    class exceptions:  # (ray's own name)
        class RayError(Exception):
            pass

        class WorkerCrashedError(RayError):
            pass

        class RayTaskError(RayError):
            pass

    def __init__(self) -> None:
        self.submitted: list[Ref] = []
        self.cancelled: list[int] = []
        self.waits = 0

    def is_initialized(self) -> bool:
        return True

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 4}

    def remote(self, **_: Any) -> Any:
        def wrap(_fn: Any) -> Any:
            def submit(data: dict[str, Any]) -> Ref:
                self.submitted.append(Ref(len(self.submitted), data))
                return self.submitted[-1]

            return SimpleNamespace(remote=submit)

        return wrap

    def wait(self, pending: list[Any], num_returns: int = 1, timeout: float | None = None) -> Any:
        self.waits += 1
        if self.waits == 1:
            return [pending[0]], pending[1:]
        raise KeyboardInterrupt

    def get(self, ref: Ref) -> str:
        request = BenchRequest(workspace=Path(ref.data["workspace"]), candidate=Path(ref.data["candidate"]))
        return ok(request).model_dump_json()

    def cancel(self, ref: Ref, force: bool = False) -> None:
        self.cancelled.append(ref.number)


def test_a_ctrl_c_on_ray_cancels_the_tasks_still_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RayExecutor let the KeyboardInterrupt through without ray.cancel: the two tasks still
    pending ran on in the cluster, on its GPUs, for a run nobody waited for."""
    from kernelscope.daemon.engine.run.executors import RayExecutor

    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    by_name = run(tmp_path, RayExecutor(), ["a.py", "b.py", "c.py"])
    assert sorted(fake.cancelled) == [1, 2]
    assert by_name["a.py"].passed
    assert by_name["b.py"].error.kind == by_name["c.py"].error.kind == "interrupted"  # type: ignore[union-attr]


class KilledWorker:
    """What release() reads of a warm worker the pool's close killed mid-job."""

    pid, broken, generation = 12345, "died while running this job", 0

    def alive(self) -> bool:
        return False

    def close(self) -> None:
        pass


def test_no_lost_worker_warning_once_the_pool_is_closed(caplog: pytest.LogCaptureFixture) -> None:
    """A second Ctrl-C closes the batch's pool under a running job: its worker, killed by the
    close, came back with "warm benchmark worker pid N lost ...: the next job starts a new one",
    though no next job comes."""
    pool = WarmWorkers()
    pool.close()
    killed = KilledWorker()
    with caplog.at_level(logging.WARNING, logger="kernelscope.bench"):
        pool.release(killed)  # type: ignore[arg-type]
    assert [r.getMessage() for r in caplog.records if "lost" in r.getMessage()] == []
