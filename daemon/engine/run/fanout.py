"""`kernelscope bench --candidates`: many variants against one baseline, ranked.

Each candidate becomes one `BenchRequest` (or one per configuration group, `config_groups`)
run by an executor (local subprocesses or Ray tasks); passing candidates are ranked by score
(geometric-mean speedup), failures follow in the order given, each with its own structured
failure. Interpreter timings never rank: under the CPU interpreter passing candidates keep the
order given (a cheat that skips the interpreter would otherwise come first). A Ctrl-C keeps
what finished: the candidates it stopped (running or not started) are `interrupted`, the rest
keep their results, and a candidate one of whose configuration groups failed before it keeps
that failure.
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
from kernelscope.protocol.bench import (
    GROUP_PREFIX,
    BenchResult,
    CandidatesReport,
    RankedCandidate,
    judged_nothing,
)

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


def _stopped(result: BenchResult) -> bool:
    return result.error is not None and result.error.kind == "interrupted"


def _run_keeping_what_finished(requests: list[BenchRequest], executor: Executor) -> list[BenchResult | None]:
    """Every request's result, or None for one a Ctrl-C stopped: the jobs that finished
    before it keep their results (the executor cancels the running ones, whose cancelled
    results are no verdict, and drops those not started) so that an interrupted
    `--candidates` still reports what it measured. A verdict is kept whenever it arrives,
    after the interrupt too: a runner that had just finished when the Ctrl-C came hands it on
    while the executor winds down. After the interrupt, a result that judged nothing may be
    the interrupt's doing (a cancelled run, a warm worker killed with the batch): calling it
    interrupted loses no verdict."""
    finished: list[BenchResult | None] = [None] * len(requests)
    cancel = threading.Event()  # set by the executor when it is interrupted

    def keep(index: int, result: BenchResult) -> None:
        if not _stopped(result) and not (cancel.is_set() and judged_nothing(result)):
            finished[index] = result

    try:
        return list(executor.run_many(requests, on_result=keep, cancel=cancel))
    except KeyboardInterrupt:
        cancel.set()
        return list(finished)  # a copy: a job a second Ctrl-C left running may still report


def _candidate_result(groups: list[BenchRequest], done: list[BenchResult | None]) -> BenchResult:
    """One candidate's result from its configuration groups' (None: a group a Ctrl-C stopped).
    All finished: merged. A finished group that failed is a verdict a stopped group cannot
    change: that failure is the candidate's, saying which groups were stopped. Else nothing
    was decided: `interrupted`, in the mode of a group that finished if any did."""
    if all(result is not None for result in done):
        return merge_results(done)  # type: ignore[arg-type]
    stopped = [f"{GROUP_PREFIX}{i}/{len(done)}" for i, result in enumerate(done) if result is None]
    failed = next((i for i, result in enumerate(done) if result is not None and not result.passed), None)
    if failed is not None:
        result = done[failed].model_copy(deep=True)  # type: ignore[union-attr]
        result.messages.append(
            f"{GROUP_PREFIX}{failed}/{len(done)} failed; a Ctrl-C stopped {', '.join(stopped)} unfinished"
        )
        return result
    interrupted = failure_result(groups[done.index(None)], "interrupted", INTERRUPTED)
    measured = next((result for result in done if result is not None), None)
    if measured is not None:
        interrupted.mode = measured.mode
    return interrupted


def _interrupted_message(results: list[BenchResult], cut_short: int) -> str | None:
    """What the report says of a Ctrl-C: how many candidates have no verdict, how many have
    one from the groups that finished before it, and (only when some are left) that the
    others' results are complete."""
    stopped = sum(1 for r in results if _stopped(r))
    if not stopped and not cut_short:
        return None
    total = counted(len(results), "candidate")
    parts = []
    if stopped:
        parts.append(f"{stopped} of {total} did not finish (kind interrupted, no verdict)")
    if cut_short:
        parts.append(
            f"{cut_short} of {total} failed in a configuration group that finished "
            "(its other groups were stopped)"
        )
    if stopped + cut_short < len(results):
        parts.append("the others' results are complete")
    return "interrupted (Ctrl-C): " + "; ".join(parts)


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
    cut_short = 0  # candidates failed by a finished group while others were stopped
    for groups in requests:
        done, flat = flat[: len(groups)], flat[len(groups) :]
        results.append(_candidate_result(groups, done))
        cut_short += None in done and not _stopped(results[-1])
    entries = list(zip(candidates, results, strict=True))
    comparable = all(result.comparable for result in results)
    passing = [e for e in entries if e[1].passed]
    if comparable:
        passing.sort(key=lambda e: -(e[1].score or 0.0))
    failing = [e for e in entries if not e[1].passed]
    messages = []
    interrupted = _interrupted_message(results, cut_short)
    if interrupted:
        messages.append(interrupted)
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
