"""The one-line texts an editor shows above each kernel and at the top of kernel.py: the file's
target line, each kernel's summary, the running job and the latest probe.

Shared by the LSP code lenses, inlay hints and hover, and by `kernelscope demo`. They work
on a workspace kernelscope has never seen: the memory records alone carry the scores
(speedup vs v0 from latency when both have it, else the ratio of the README's target
metric); experiments in the store, when present, add per-kernel detail.
"""

from __future__ import annotations

from pathlib import Path

from kernelscope.daemon.engine import counted
from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.memory.records import MemoryEntry, cut_short_note, unreadable_note
from kernelscope.daemon.engine.memory.scores import (
    BY_SCORE,
    VersionScore,
    best_score,
    best_version,
)
from kernelscope.daemon.engine.memory.stop_rule import no_figure_note, target_fraction
from kernelscope.daemon.engine.views.stop_judgements import (
    ConditionJudged,
    StopJudgements,
    judge_stop_conditions,
    stop_judgements,
)
from kernelscope.daemon.engine.workspace import atrex
from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
from kernelscope.daemon.engine.workspace.masked import has_runs, run_counts
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.protocol.bench import BenchResult, verdict_label
from kernelscope.protocol.commands import NOT_EVALUATED
from kernelscope.protocol.experiment import KernelSummary
from kernelscope.protocol.memory import format_version
from kernelscope.protocol.record_rules import format_score, record_figure
from kernelscope.protocol.stats import NOT_GPU_FIGURES
from kernelscope.protocol.workspace import CANONICAL_UNIT, ReadmeInfo, StopCondition


def runs_text(runs: int, masked: int, noun: str = "run") -> str:
    """`3 runs (+1 masked)`, `1 run`: the runs a kernel's figures count (`noun`, singular, made
    plural but for one by `counted`; none in a table's runs column), and those of masked versions
    they leave out (workspace/masked.py), so a person sees that the history holds more."""
    return (counted(runs, noun) if noun else str(runs)) + (f" (+{masked} masked)" if masked else "")


def kernel_lens(summary: KernelSummary | None, scores: list[VersionScore]) -> str:
    """`best 1.42x v7 | latest 0.97x v9 | 12 runs (+2 masked), 2 failed` for one kernel: the
    store's digest (read through the workspace's masks) when it has runs or masked ones
    (`has_runs`), else the records'. Either way a run is a measured version, the baseline's
    (v0, 1.00x) as any other, so the two agree on the same history (and with hover's count),
    and a masked version is in no figure (hidden from the active memory, as blame hides it),
    only in the `(+N masked)` count: a kernel whose runs are all masked shows
    `best - | latest - | 0 runs (+1 masked), 0 failed`."""
    if has_runs(summary):
        best = (
            f"best {format_score(summary.best_score)} {summary.best_version or ''}".rstrip()
            if summary.best_score is not None
            else "best -"
        )
        if summary.latest_id is None:  # every run masked
            latest = "latest -"
        elif summary.latest_score is not None and summary.latest_status not in ("failed", "timeout"):
            latest = f"latest {format_score(summary.latest_score)} {summary.latest_version or ''}".rstrip()
        else:
            latest = f"latest FAILED {summary.latest_version or ''}".rstrip()
        runs = runs_text(summary.runs, summary.masked_runs)
        return f"{best} | {latest} | {runs}, {summary.failures} failed"
    if not scores:
        return "no iterations yet"
    active = [s for s in scores if not s.masked]
    top = best_score(scores)
    last = active[-1] if active else None
    # A pivot or blocked episode is an outcome of the search, not a kernel that failed its gate.
    outcomes: dict[str, int] = {}
    for s in active:
        if s.label:
            outcomes[s.label] = outcomes.get(s.label, 0) + 1
    failed = sum(1 for s in active if not s.passed and not s.label)
    best_text = (
        f"best {format_score(top.score)} {top.version}"
        if top is not None and top.score is not None
        else "best -"
    )
    if last is None:
        latest_text = "latest -"
    elif last.label:
        carried = f", kept {last.carried_from}" if last.carried_from else ""
        latest_text = f"latest {last.version} {last.label}{carried}"
    elif last.passed and last.score is not None:
        latest_text = f"latest {format_score(last.score)} {last.version}"
        if last.unchanged:
            latest_text += " (no measurable change)"
    else:
        latest_text = f"latest {'FAILED' if not last.passed else '-'} {last.version}"
    extra = "".join(f", {count} {label}" for label, count in sorted(outcomes.items()))
    runs = runs_text(*run_counts(scores))
    return f"{best_text} | {latest_text} | {runs}, {failed} failed{extra}"


def condition_label(condition: StopCondition) -> str:
    """`latency <= 10 us`, `bandwidth >= 4.32TB/s`: a condition as the lens names it, its target
    as the README states it (the parser's `target_text`: as written, or what its arithmetic comes
    to), the metric named as kernelscope reads it."""
    target = condition.target_text or f"{condition.comparator} {condition.value:g}{condition.unit}"
    return f"{condition.kind} {target}"


def _amount(condition: StopCondition, measured: float) -> str:
    """A figure in its condition's canonical unit: `20 us`, `3870 GB/s`, and a utilization as a
    percentage is written, `45.2%`."""
    unit = CANONICAL_UNIT[condition.kind]
    return f"{measured:.4g}{'' if unit == '%' else ' '}{unit}"


def _percent(condition: StopCondition, measured: float | None) -> str:
    return f"{100 * target_fraction(condition, measured or 0.0):.0f}%" if measured else "-"


def _target_parts(judged: ConditionJudged, best: MemoryEntry | None) -> list[str]:
    """What is known of the README's first stop condition: the best version's figure against it
    (the one best-version rule, scores.best_version), and, where that does not tell it, the
    best figure an evaluated version (memory/stop_rule.py: GPU, gate passed, its own numbers;
    not masked) recorded: `met by vN` when it met the target, else `best GPU figure`. A best
    version measured by the interpreter is `not evaluated`, never met or missed, and never
    hides a GPU version that met the target."""
    condition, status, top = judged.condition, judged.status, judged.top
    target = f"target {condition_label(condition)}"

    def amount(measured: float | None) -> str:
        return _amount(condition, measured or 0.0)

    def against(measured: float | None) -> str:
        return f"{_percent(condition, measured)} of target"

    evaluated = status is not None and status.met is not None
    known: list[str] = []
    if top is not None and top[1].met and not (evaluated and best is top[0]):
        known.append(f"met by {top[0].version}: {amount(top[1].measured)}, {against(top[1].measured)}")
    if best is not None and status is not None and evaluated:
        met = " (met)" if status.met else ""
        parts = [
            target,
            *known,
            f"best {amount(status.measured)} {best.version}, {against(status.measured)}{met}",
        ]
        pct_key = {
            "bandwidth": "bandwidth_peak_utilization_pct",
            "tflops": "tflops_peak_utilization_pct",
        }.get(condition.kind)
        pct = best.record.metric(pct_key) if pct_key and best.record else None
        if pct is not None:
            parts.append(f"roofline {pct:.0f}%")
        return parts
    if top is not None and not known:
        known.append(
            f"best GPU figure {amount(top[1].measured)} {top[0].version}, {against(top[1].measured)}"
        )
    if best is None or status is None:
        return [target, "no passing measurement yet"]
    if status.note == NOT_GPU_FIGURES:
        if known or (best.record and record_figure(best.record, condition.kind) is not None):
            return [target, *known, f"best {best.version}: not evaluated ({NOT_GPU_FIGURES})"]
        return [target, "interpreter runs only (CPU timings are not GPU figures)"]
    if status.note == no_figure_note(condition):
        return [target, *known, f"best {best.version}, {status.note}"]
    return [target, *known, f"best {best.version}: {status.state()}"]


def _further_part(judged: ConditionJudged, best: MemoryEntry | None) -> tuple[str, str]:
    """A stop condition after the README's first, by the same rule as the first, in full and in
    one word or two (`met`, `at 94%`, `not evaluated`) for the lens's short part. In full:
    `bandwidth >= 4.32TB/s: 94% v4` (the best version's percentage of the target, `(met)` where
    it met it), `, met by v2` where another evaluated version met what the best missed;
    `met by v2` or `best GPU figure 83% v2` where the best has no evaluated figure, and
    `not evaluated` with the best version's reason where no version has one."""
    condition, status, top = judged.condition, judged.status, judged.top
    label = condition_label(condition)
    if best is not None and status is not None and status.met is not None:
        text = f"{label}: {_percent(condition, status.measured)} {best.version}" + (
            " (met)" if status.met else ""
        )
        if not status.met and top is not None and top[1].met:
            return text + f", met by {top[0].version}", "met"
        return text, "met" if status.met else f"at {_percent(condition, status.measured)}"
    if top is not None:
        if top[1].met:
            return f"{label}: met by {top[0].version}", "met"
        percent = _percent(condition, top[1].measured)
        return f"{label}: best GPU figure {percent} {top[0].version}", f"at {percent}"
    why = f" ({status.note})" if status is not None and status.note else ""
    return f"{label}: {NOT_EVALUATED}{why}", NOT_EVALUATED


def _further_short(shorts: list[str]) -> str:
    """`+2: 1 met, 1 at 32%`: the conditions after the first, in one part (each in full in the
    lens's tooltip and the kernel's hover: `stop_condition_lines`)."""
    met = shorts.count("met")
    missed = [short.removeprefix("at ") for short in shorts if short.startswith("at ")]
    unknown = shorts.count(NOT_EVALUATED)
    words = [f"{met} met"] if met else []
    if missed:
        words.append(f"{len(missed)} at {'/'.join(missed)}")
    if unknown:
        words.append(f"{unknown} {NOT_EVALUATED}")
    return f"+{len(shorts)}: {', '.join(words)}"


def stop_condition_lines(
    ws: Workspace,
    entries: list[MemoryEntry] | None = None,
    readme: ReadmeInfo | None = None,
    scores: list[VersionScore] | None = None,
    judged: StopJudgements | None = None,
) -> list[str]:
    """Every README stop condition in full, one line each (`latency <= 10 us: best 20 us v1, 50%
    of target`): what the file lens shortens, for its tooltip and the kernel's hover. `judged`:
    the conditions already judged (views/stop_judgements.py), as the file lens drew on them."""
    judged = judged or judge_stop_conditions(ws, entries, readme, scores)
    lines = []
    if judged.conditions:
        first, *further = judged.conditions
        parts = ", ".join(_target_parts(first, judged.best)[1:])
        lines.append(f"{condition_label(first.condition)}: {parts}")
        lines += [_further_part(condition, judged.best)[0] for condition in further]
    if judged.readme is not None and judged.readme.unchecked_stop_conditions:
        lines += [f"{text}: cannot be checked" for text in judged.readme.unchecked_stop_conditions]
    return lines


def file_lens(
    ws: Workspace,
    entries: list[MemoryEntry] | None = None,
    readme: ReadmeInfo | None = None,
    scores: list[VersionScore] | None = None,
    judged: StopJudgements | None = None,
) -> str:
    """Target vs best with the roofline fraction, a second stop condition in short and more in
    one part (`+2: 1 met, 1 at 32%`, each in full in `stop_condition_lines`), next version and
    masked count. The best is the one every surface names (scores.best_version),
    shown by the first target's metric; each condition is judged by the one rule
    (memory/stop_rule.py), and what its state is, where that best does not tell it, is
    `_target_parts`'s (the first) and `_further_part`'s (the others).

    Callers that already scanned memory/, parsed the README and scored the versions
    (`memory_scores(entries, readme)`) pass them in: a workspace can hold a thousand memory
    files, and reading them once per refresh is enough; `judged`, the stop conditions judged
    on them (views/stop_judgements.py), is what the tooltip draws on too."""
    judged = judged or judge_stop_conditions(ws, entries, readme, scores)
    readme, entries, scores = judged.readme, judged.entries, judged.scores
    parts = []
    conditions = judged.conditions
    if conditions:
        if readme is not None and readme.goal and readme.primary_kind is None:
            # (only utilization targets: no measure of the best, whose progress the goal's line says)
            parts.append(_goal_progress(readme.goal, entries, scores))
        parts += _target_parts(conditions[0], judged.best)
        further = [_further_part(condition, judged.best) for condition in conditions[1:]]
        if len(further) == 1:
            parts.append(further[0][0])
        elif further:  # (in full in the tooltip and the hover: a title of 220 characters is none)
            parts.append(_further_short([short for _, short in further]))
    elif readme is not None and readme.goal:
        parts.append(_goal_progress(readme.goal, entries, scores))
    elif readme is not None and readme.stated_stop_conditions:  # (in words, or unreadable)
        stated = counted(len(readme.stated_stop_conditions), "stop condition")
        parts.append(f"{stated} in README.md, none kernelscope can check")
    else:
        parts.append("no stop conditions in README.md")
    if readme is not None and readme.unchecked_stop_conditions and (conditions or readme.goal):
        # (the README's warnings say why)
        parts.append(f"{counted(len(readme.unchecked_stop_conditions), 'stop condition')} cannot be checked")
    live = atrex.live_episode(ws.memory_dir)
    if live is not None:
        parts.append(f"running: {live.describe()}")
    next_text = f"next {format_version(entries[-1].number + 1 if entries else 0)}"
    if atrex.supervisor(ws.root) is not None:
        next_text += " (the supervisor's; kernelscope observes)"
    parts.append(next_text)
    masked = sum(1 for e in entries if e.masked)
    parts.append(f"{masked} masked")
    # a corrupt record is left out of every figure above: say so, or its absence reads as data
    unreadable = [e.path.name for e in entries if e.error]
    if unreadable:
        parts.append(unreadable_note(unreadable))
    pending = [e.path.name for e in entries if e.pending]
    if pending:  # shown as a cut-short mask-half leaves them (MemoryManager.scan): say so
        parts.append(cut_short_note(pending))
    return " | ".join(parts)


def _goal_progress(goal: str, entries: list[MemoryEntry], scores: list[VersionScore]) -> str:
    """A README that states a goal instead of a threshold (atrex's SOL seed: minimize the
    geomean latency over the workloads): the best version (scores.best_version: by the one
    score, so under atrex v0.3's objective the version it promoted; with no score vs v0, the
    lowest measured latency), its latency and its speedup vs the reference."""
    text = goal if len(goal) <= 60 else goal[:59] + "…"
    chosen, rule = best_version(entries, None, scores)
    best = next((e for e in entries if e.version == chosen and e.record), None)
    measured = best is not None and best.record and atrex_fields.record_outcome(best.record).measured
    latency = best.record.metric("latency_us") if best is not None and best.record and measured else None
    if best is None or not measured or (latency is None and rule != BY_SCORE):
        return f"goal: {text} | no passing measurement yet"
    shown = f"{latency:.4g} us {best.version}" if latency is not None else best.version
    speedup = atrex_fields.speedup_vs_reference(best.record) if best.record else None
    versus = (
        f", {format_score(speedup.value, versus='reference', aggregate=speedup.aggregate)}"
        if speedup is not None
        else ""
    )
    return f"goal: {text} | best {shown}{versus}"


def recorded_notes(root: Path, entries: list[MemoryEntry], versions: int = 4) -> list[str]:
    """Markdown lines for hover: what the agents recorded for the newest `versions` versions
    (experiments with their decision and result, open directions, the episode outcome,
    per-workload latency), and the running episode. Nothing when the records hold none."""
    lines: list[str] = []
    live = atrex.live_episode(root / "memory")
    if live is not None:
        lines += [f"**running now**: {live.describe()}", ""]
    recorded = [e for e in entries if e.record is not None and not e.masked]
    for entry in reversed(recorded[-versions:]):
        record = entry.record
        assert record is not None
        outcome = atrex_fields.record_outcome(record)
        notes = atrex_fields.experiments(record)
        directions = atrex_fields.open_directions(record)
        shapes = atrex_fields.latency_by_shape(record)
        journal = atrex.journal_of(root, entry.version)
        if not (notes or directions or shapes or outcome.label or journal):
            continue
        gate = record.gate_result or "?"
        head = f"**{entry.version}** {gate}"
        if outcome.describe():
            head += f", {outcome.describe()}"
        lines.append(head)
        lines += [f"- {note.line()}" for note in notes[:8]]
        if len(notes) > 8:
            lines.append(f"- … {counted(len(notes) - 8, 'more experiment')}")
        if shapes:
            kind = "carried" if outcome.carried_from else "measured"
            label = atrex_fields.workload_label
            cells = " · ".join(f"{label(name)} {value:.3g} us" for name, value in list(shapes.items())[:6])
            lines.append(f"- per workload ({kind}): {cells}")
        if journal is not None and journal.summary:
            lines.append(f"- episode {journal.episode} {journal.state}: {journal.summary}")
        if directions:
            lines.append(f"- open directions: {'; '.join(directions[:3])}")
        lines.append("")
    return lines


def kernel_texts(
    kernels: list[str], summaries: dict[str, KernelSummary], scores: list[VersionScore], stale: bool
) -> dict[str, str]:
    """Kernel name -> its one-line summary (lens, inlay hint, hover). A kernel without
    experiments in the store (none at all, masked or not) shows the memory records' summary
    (the same text for all)."""
    prefix = "(stale) " if stale else ""
    from_memory: str | None = None

    def text(name: str) -> str:
        nonlocal from_memory
        summary = summaries.get(name)
        if has_runs(summary):
            return kernel_lens(summary, scores)
        if from_memory is None:
            from_memory = kernel_lens(None, scores)
        return from_memory

    return {name: prefix + text(name) for name in kernels}


def workspace_texts(cache: WorkspaceCache) -> tuple[str, dict[str, str]]:
    """The file's lens line and each kernel's, as `kernelscope serve` shows them (the demo
    prints these): kept by the workspace cache until a source they are made of changes."""
    file_text = cached_file_lens(cache)
    texts = cache.get(
        "kernel_texts",
        ("kernel", "memory", "readme", "store"),
        # the names read inside: a kernel.py changed meanwhile makes this value one not kept
        lambda: kernel_texts(
            [k.name for k in cache.kernels().kernels], cache.kernel_summaries(), cache.scores(), stale=False
        ),
    )
    return file_text, texts


def cached_file_lens(cache: WorkspaceCache) -> str:
    """`file_lens` for the workspace's current sources, kept by its cache: the lens and the
    kernel's hover."""
    return cache.get(
        "file_lens",
        ("memory", "readme", "supervisor"),  # "next v5 (the supervisor's; ...)"
        lambda: file_lens(cache.workspace, judged=stop_judgements(cache)),
    )


def file_tooltip(cache: WorkspaceCache) -> str | None:
    """The file lens's tooltip: every stop condition in full, one a line (None: none stated)."""
    return "\n".join(tooltip_lines(cache)) or None


def tooltip_lines(cache: WorkspaceCache) -> list[str]:
    """`stop_condition_lines` for the workspace's current memory and README, kept by its cache:
    the file lens's tooltip and the kernel's hover."""
    return cache.get(
        "stop_condition_lines",
        ("memory", "readme"),
        lambda: stop_condition_lines(cache.workspace, judged=stop_judgements(cache)),
    )


UNTRUSTED = "re-benchmark on save is off: workspace not trusted (Benchmark now: `kernelscope bench`)"


def configs_text(done: int, total: int) -> str:
    """A job's progress, `3/8 configs` (`1 config` before the harness has said how many): the
    lens above the file and the client's $/progress report say it alike."""
    return f"{done}/{total} configs" if total else counted(done, "config")


def job_text(kind: str, done: int, total: int) -> str:
    return f"{kind}: {configs_text(done, total)}"


def cancelled_text(kind: str) -> str:
    return f"{kind} cancelled"


def probe_text(probe: BenchResult, stale: bool) -> str:
    """`last probe: PASS 1.42x vs v3 [gpu]`: the latest background benchmark, against the best
    recorded version (workflows/probe.py); a run that was no verdict says `bench`'s word for it,
    `last probe: NOT RUN (setup) [gpu]`, `last probe: STOPPED (out_of_memory) [gpu]`."""
    verdict = verdict_label(probe)
    against = probe.baseline_version or ("reference" if probe.baseline == "reference" else "the baseline")
    score = f" {format_score(probe.score, versus=against)}" if probe.score is not None else ""
    if probe.verdict == "no measurable change":
        score += " (no measurable change)"
    elif probe.score is not None and not probe.comparable:
        score += " (not comparable)"
    partial = ", partial: smaller sizes" if probe.shrunk() else ""
    return f"last probe: {verdict}{score} [{probe.mode}{partial}]{' (stale)' if stale else ''}"
