"""`kernelscope bench --candidates`: many variants against one baseline, ranked.

Each candidate becomes one `BenchRequest` (or one per configuration group, `config_groups`)
run by an executor (local subprocesses or Ray tasks); passing candidates are ranked by score
(geometric-mean speedup), failures follow in the order given, each with its own structured
failure. Interpreter timings never rank: under the CPU interpreter passing candidates keep the
order given (a cheat that skips the interpreter would otherwise come first). A Ctrl-C keeps
what finished: the candidates it stopped (running or not started) are `interrupted`, the rest
keep their results.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

from kernelscope.daemon.engine import UsageError, counted
from kernelscope.daemon.engine.run.bench import BenchRequest
from kernelscope.daemon.engine.run.config_groups import merge_results, split_request
from kernelscope.daemon.engine.run.executors import Executor, failure_result
from kernelscope.protocol.bench import BenchResult, CandidatesReport, RankedCandidate

# What a candidate a Ctrl-C stopped (running, or not started yet) says: no verdict on it.
INTERRUPTED = "stopped by Ctrl-C before it finished: nothing was decided about this candidate"


def expand_candidates(paths: list[Path]) -> list[Path]:
    """Files as given; a directory contributes its *.py files (sorted)."""
    found: list[Path] = []
    for path in paths:
        path = path.expanduser().resolve()
        if path.is_dir():
            found.extend(sorted(p for p in path.glob("*.py") if p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"candidate {path} does not exist")
    if not found:
        raise UsageError("no candidate files given")
    return list(dict.fromkeys(found))


def _run_keeping_what_finished(requests: list[BenchRequest], executor: Executor) -> list[BenchResult | None]:
    """Every request's result, or None for one a Ctrl-C stopped: the jobs that finished
    before it keep their results (the executor cancels the running ones, whose cancelled
    results are no verdict, and drops those not started) so that an interrupted
    `--candidates` still reports what it measured."""
    finished: list[BenchResult | None] = [None] * len(requests)
    cancel = threading.Event()  # set by the executor when it is interrupted

    def keep(index: int, result: BenchResult) -> None:
        if not cancel.is_set():
            finished[index] = result

    try:
        return list(executor.run_many(requests, on_result=keep, cancel=cancel))
    except KeyboardInterrupt:
        cancel.set()
        return finished


def bench_candidates(
    template: BenchRequest,
    candidates: list[Path],
    executor: Executor,
    executor_name: str,
    config_groups: int = 1,
) -> CandidatesReport:
    """Every candidate x configuration group is one executor task; the groups of a candidate
    are merged back into its one result before ranking."""
    requests = [
        split_request(replace(template, candidate=candidate), config_groups) for candidate in candidates
    ]
    started = time.perf_counter()
    flat = _run_keeping_what_finished([request for groups in requests for request in groups], executor)
    wall = time.perf_counter() - started
    results = []
    for groups in requests:
        done = flat[: len(groups)]
        stopped = next((i for i, result in enumerate(done) if result is None), None)
        if stopped is None:
            results.append(merge_results(done))  # type: ignore[arg-type]
        else:  # a candidate is finished only when all of its groups are
            results.append(failure_result(groups[stopped], "interrupted", INTERRUPTED))
        flat = flat[len(groups) :]
    entries = list(zip(candidates, results, strict=True))
    comparable = all(result.comparable for result in results)
    passing = [e for e in entries if e[1].passed]
    if comparable:
        passing.sort(key=lambda e: -(e[1].score or 0.0))
    failing = [e for e in entries if not e[1].passed]
    messages = []
    stopped_count = sum(1 for r in results if r.error is not None and r.error.kind == "interrupted")
    if stopped_count:
        messages.append(
            f"interrupted (Ctrl-C): {stopped_count} of {counted(len(results), 'candidate')} did not finish "
            "(kind interrupted, no verdict); the others' results are complete"
        )
    if not comparable:
        messages.append(
            "timing is not comparable under the CPU interpreter: candidates are ranked by gate verdict "
            "only (passing first, in the order given); measure on a GPU to rank by score"
        )
    ranking = [
        RankedCandidate(
            rank=rank,
            candidate=str(path),
            passed=result.passed,
            score=result.score if result.passed else None,
            result=result,
        )
        for rank, (path, result) in enumerate(passing + failing, start=1)
    ]
    return CandidatesReport(
        workspace=str(template.workspace),
        baseline=str(template.baseline or "default"),
        executor=executor_name,
        ranking=ranking,
        wall_s=wall,
        comparable=comparable,
        messages=messages,
    )
