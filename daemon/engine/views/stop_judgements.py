"""The README's stop conditions judged on the versions, once per refresh: what the file lens,
its tooltip and the kernel's hover (views/lens_text.py) are all drawn from.

Each condition is judged on every shown version's record by the one rule (memory/stop_rule.py);
the lens and its tooltip each did it again for the same memory and README (with a thousand
records and a few conditions, thousands of judgements per refresh where one pass is the
answer). `stop_judgements` keeps the one pass in the workspace cache until memory/ or the README
changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelscope.daemon.engine.memory.records import MemoryEntry
from kernelscope.daemon.engine.memory.scores import VersionScore, best_figure, best_version, memory_scores
from kernelscope.daemon.engine.memory.stop_rule import condition_status
from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.protocol.commands import StopConditionStatus
from kernelscope.protocol.workspace import ReadmeInfo, StopCondition

Judged = tuple[MemoryEntry, StopConditionStatus]


@dataclass(frozen=True)
class ConditionJudged:
    """One condition: the one rule's answer for the best version (`status`, None when there is
    no best), and the best figure an evaluated version recorded (`top`: the highest GB/s,
    TFLOP/s or utilization, the lowest latency, among the versions shown)."""

    condition: StopCondition
    status: StopConditionStatus | None
    top: Judged | None


@dataclass(frozen=True)
class StopJudgements:
    """What the file lens reads (memory, README, scores), the best version by the README's
    primary metric (scores.best_version; by the one score where its only conditions are
    utilizations), and every condition judged."""

    readme: ReadmeInfo | None
    entries: list[MemoryEntry]
    scores: list[VersionScore]
    best: MemoryEntry | None
    conditions: list[ConditionJudged]


def judge_stop_conditions(
    ws: Workspace,
    entries: list[MemoryEntry] | None = None,
    readme: ReadmeInfo | None = None,
    scores: list[VersionScore] | None = None,
) -> StopJudgements:
    """Every README stop condition judged on the versions (what its caller has not read already
    is read here)."""
    if readme is None and ws.readme_path.is_file():
        readme = ws.readme()
    entries = ws.memory.scan() if entries is None else entries
    scores = memory_scores(entries, readme) if scores is None else scores
    conditions = readme.stop_conditions if readme else []
    best = None
    if conditions and readme is not None:  # (by the README's primary metric: never a utilization)
        chosen, _ = best_version(entries, readme.primary_kind, scores)
        best = next((e for e in entries if e.version == chosen and e.record), None)
    judged = [_judge(condition, entries, best) for condition in conditions]
    return StopJudgements(readme, entries, scores, best, judged)


def stop_judgements(cache: WorkspaceCache) -> StopJudgements:
    """The one pass for the workspace's current memory and README, kept by its cache."""
    return cache.get(
        "stop_judgements",
        ("memory", "readme"),
        lambda: judge_stop_conditions(cache.workspace, cache.memory(), cache.readme(), cache.scores()),
    )


def _judge(condition: StopCondition, entries: list[MemoryEntry], best: MemoryEntry | None) -> ConditionJudged:
    """The one rule's answer for each version shown (not masked): the best version's, and the
    best figure evaluated, ties to the later version (as scores.best_version's metric rule)."""
    judged = [
        (e, condition_status(condition, e.record)) for e in entries if e.record is not None and not e.masked
    ]
    evaluated = [(e, s) for e, s in judged if s.met is not None and s.measured is not None]
    figures = [((e, s), s.measured or 0.0) for e, s in evaluated]
    top = best_figure(figures, condition.kind)[0] if figures else None
    of_best = next((s for e, s in judged if e is best), None)
    return ConditionJudged(condition, of_best, top)
