"""The messages a person (or an agent) reads under kernel.py: what the check of the text found
(a recorded version with the same code, or one close to it and what was tried at the changed
meta-parameters), what the latest background probe measured, and that re-benchmark on save is
off; and, on a memory record that cannot be read, why (record_notices). Plain data (`Notice`);
the LSP layer places them on the kernel's line (a record's on that record's file).

One short line each, and every action named is a shell command an agent can run in the
workspace (`kernelscope bench`, `kernelscope iterate ...`), with the editor's command id beside
it for people; details live in hover.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from kernelscope.protocol.bench import BenchResult, verdict_headline, verdict_word
from kernelscope.protocol.history import FingerprintCheck, TriedHint
from kernelscope.protocol.record_rules import format_score

if TYPE_CHECKING:
    from pathlib import Path

    from kernelscope.daemon.engine.history.service import HistoryService
    from kernelscope.daemon.engine.memory.records import MemoryEntry
    from kernelscope.protocol.settings import Distrust
    from kernelscope.protocol.workspace import SourceError

REGRESSION_BELOW = 0.98  # the upper end of the 95% interval must be below this
Severity = Literal["error", "warning", "information", "hint"]
MEASURE = "measure anyway: `kernelscope bench` (editor: kernelscope.benchmark)"
RECORD = (
    'record it: `kernelscope iterate -a <category> -d "<what changed>"` (editor: kernelscope.runIteration)'
)
# where an orchestrator drives the workspace, `iterate` refuses: its supervisor records versions
SUPERVISED = "the supervisor driving this workspace records its versions (kernelscope only observes)"


@dataclass(frozen=True)
class Notice:
    severity: Severity
    code: str
    message: str
    # where it points, 1-based line and 0-based columns (None: the first kernel's line)
    line: int | None = None
    column: int = 0
    end_line: int | None = None
    end_column: int | None = None


def static_notices(
    text: str,
    kind: str | None,
    whole: bool = False,
    framework: bool = False,
    undeclared: tuple[int | None, str] | None = None,
    name: str = "kernel.py",
) -> list[Notice]:
    """The static rules (protocol/static_rules.py: KernelBench's and kernelscope's) on the text
    as it is typed, each on its own line; nothing runs. An error is what `kernelscope bench`
    fails as static_check. `framework`: the workspace declares a non-Triton solution (the
    cache's, or kinds.declared_framework), so the PyTorch-instead-of-Triton rules are off;
    `undeclared`: its warning where kernel.py or the README says Triton (kinds.undeclared_triton).
    A text that does not parse (`name`: the file it is, as the notice names it) gets one
    notice at the error instead:
    every check of kernelscope's stops there, which a Python language server's own syntax
    error does not say (its message is the parser's; this one says what stopped)."""
    from kernelscope.protocol.static_rules import check_source

    if (unread := unread_notice(text, whole, name)) is not None:
        return [unread]
    declared = [Notice("warning", "undeclared-triton", undeclared[1], undeclared[0])] if undeclared else []
    return declared + [
        Notice(
            "error" if f.severity == "error" else "warning",
            f"static:{f.rule}",
            f"{f.message} [{f.rule}, {f.source}]",
            f.line,
            f.column,
            f.end_line,
            f.end_column,
        )
        for f in check_source(text, kind=kind, framework=framework)
    ]


def unread_notice(text: str, whole: bool = False, name: str = "kernel.py") -> Notice | None:
    """The one notice of a text the static rules do not read (None: they do): too large for
    the editor (unless `whole`), or it does not parse (at the error). Known before the rules
    run, so the daemon publishes it with the text's verdict rather than after it (the verdict
    of such a text says nothing: a publication without it would be an empty one)."""
    from kernelscope.daemon.engine.workspace.kernel_scan import too_large

    if (reason := too_large(text)) is not None and not whole:
        return Notice("warning", "too_large", reason, 1, 0)
    error = parse_error(text, whole)
    if error is None:
        return None
    detail = error.message.removesuffix(f" (line {error.line})")  # (the notice is on that line)
    paused = "checks and benchmarks" if name == "kernel.py" else "checks"  # (only kernel.py is probed)
    message = f"kernelscope's {paused} are paused until {name} parses: {detail}"
    return Notice("warning", "does_not_parse", message, error.line, error.column or 0)


def tried_at(hints: list[TriedHint], labels: list[str]) -> list[str]:
    """For each changed meta-parameter, the tried values' verdict on the value here:
    `BLOCK_SIZE 2048 never tried; 1024 -> 9.20x v2, 4096 -> 26.40x v3`. Parameters that were
    always changed together (a grid and its BLOCK_SIZE) share one entry."""
    parts: dict[str, list[str]] = {}
    for label in labels:
        hint = next((h for h in hints if h.label == label and h.verdict), None)
        if hint is not None:
            parts.setdefault(hint.verdict, []).append(label)
    return [f"{', '.join(names)} {verdict}" for verdict, names in parts.items()]


def parse_error(text: str, whole: bool = False) -> SourceError | None:
    """Why a kernel.py text does not parse (None: it does): the one rule behind the
    does_not_parse notice and a save that is not benchmarked. Read from the verdict's analysis
    of the same text (kept by content hash: a text that parses, the common case, is not parsed
    again); the scan hints and hover make of it places the error."""
    from kernelscope.daemon.engine.history.source import FACTS
    from kernelscope.daemon.engine.workspace.kernel_scan import scan_kernel_source

    if FACTS.get(text).fingerprint is not None:
        return None
    return scan_kernel_source(text, whole=whole).error


def fingerprint_notice(check: FingerprintCheck, hints: list[TriedHint]) -> tuple[Notice | None, bool]:
    """The check's notice, and whether an identical recorded version makes the background
    benchmark unnecessary."""
    if not check.matches or check.verdict is None:
        return None, False
    severity: Severity = "information"
    if check.severity in ("warning", "information", "hint"):
        severity = check.severity
    lead = check.matches[0]
    if lead.kind == "identical" and lead.version is not None:
        message = f"{check.verdict} — not benchmarked again; {MEASURE}"
        return Notice(severity, "already_tried", message), True
    if lead.kind == "identical":  # an episode trial or an experiment: not a recorded version
        return Notice(severity, "already_tried", check.verdict), False
    parts = tried_at(hints, lead.changed) or lead.differences
    return Notice(severity, "near_tried", f"near {lead.label}: " + " | ".join(parts)), False


def text_notices(history: HistoryService, text: str, whole: bool = False) -> tuple[list[Notice], bool]:
    """A kernel.py text against every recorded version (no workspace code runs): its notices,
    and whether it is a recorded version's code (then it need not be benchmarked again). The
    daemon's diagnostics and `kernelscope check` are this (the check adds unreadable_notice); a
    text too large for the editor (kernel_scan.too_large: static_notices says so) is not
    compared, unless `whole`."""
    from kernelscope.daemon.engine.workspace.kernel_scan import too_large

    if not whole and too_large(text) is not None:
        return [], False
    check = history.fingerprint(text)
    hints = history.tried(text) if check.matches and check.matches[0].kind == "near" else []
    notice, identical = fingerprint_notice(check, hints)
    return ([notice] if notice else []), identical


def unreadable_notice(unreadable: list[str]) -> Notice | None:
    """`kernelscope check`'s word on the memory files (`unreadable`, names) its comparison left
    out: said, or "new code" and the values tried read as data. Not under kernel.py in the
    editor: there each such file carries its own warning (record_notices), which an agent is
    told once, where one under kernel.py was told again after every edit of kernel.py (Claude
    Code forgets what it delivered for a file when it edits that file)."""
    from kernelscope.daemon.engine.memory.records import unreadable_note

    if not unreadable:
        return None
    return Notice("warning", "unreadable_records", unreadable_note(unreadable, "this comparison"))


def record_notices(entries: list[MemoryEntry]) -> dict[Path, Notice]:
    """A warning on each memory file that cannot be read (`entries`: the memory scan), saying
    why and what leaves it out, on the line the reason is about (where the JSON parse stopped,
    the field the record model refuses), else the first; the daemon publishes it on that file."""
    from kernelscope.daemon.engine.memory.records import unreadable_record_note

    return {
        e.path: Notice(
            "warning", "unreadable_record", unreadable_record_note(e.path.name, e.error), e.error_line or 1
        )
        for e in entries
        if e.error is not None
    }


def probe_notices(probe: BenchResult | None, supervised: bool = False, stale: bool = False) -> list[Notice]:
    """What the latest background probe measured: a failed gate (error; a run that judged
    nothing says `bench`'s NOT RUN, STOPPED or UNSUPPORTED and why, a warning), a statistically
    significant regression (warning, GPU timings only), else its result (information), with
    how to record it (`supervised`: an orchestrator records, so no command is advised).
    Nothing once kernel.py holds another text than the one measured (`stale`): the verdict
    is of code no longer there ("probe PASS ... record it" under code that gives wrong
    results); the lens keeps the numbers, marked stale (lens_text.probe_text)."""
    if probe is None or stale:
        return []
    record = SUPERVISED if supervised else RECORD
    versus = probe.baseline_version or ("the reference" if probe.baseline == "reference" else "the baseline")
    if not probe.passed:
        kind = probe.error.kind if probe.error else "gate"
        detail = probe.error.message if probe.error else "the quality gate failed"
        if verdict_word(probe) == "FAIL":
            return [Notice("error", kind, f"benchmark gate failed: {detail}")]
        return [Notice("warning", kind, f"benchmark {verdict_headline(probe)}: {detail}")]  # not judged
    if probe.mode != "gpu":
        shrunk = probe.shrunk()
        sizes = f" (partial: ran smaller, {'; '.join(shrunk)})" if shrunk else ""
        return [
            Notice(
                "information",
                "probe",
                f"probe PASS on the CPU interpreter: correct on every configuration{sizes}; its timings are "
                f"not GPU figures, not comparable with {versus} — {record}",
            )
        ]
    if probe.score is None:
        return [Notice("information", "probe", f"probe PASS (no timing) — {record}")]
    measured = format_score(probe.score, ci=probe.score_ci, versus=versus)
    if probe.baseline != "reference" and probe.score_ci is not None and probe.score_ci[1] < REGRESSION_BELOW:
        worst = min(
            (c for c in probe.configs if c.speedup is not None), key=lambda c: c.speedup or 1.0, default=None
        )
        detail = (
            f"; worst {worst.name}: {worst.speedup:.3f}x "
            f"({worst.candidate_ms:.4g} ms vs {worst.baseline_ms:.4g} ms)"
            if (worst and worst.speedup and worst.candidate_ms and worst.baseline_ms)
            else ""
        )
        return [Notice("warning", "regression", f"regression: {measured}{detail}")]
    if probe.verdict == "no measurable change":
        return [Notice("information", "probe", f"probe PASS: no measurable change, {measured}")]
    return [Notice("information", "probe", f"probe PASS: {measured} — {record}")]


def untrusted_notice(root: str, why: Distrust) -> Notice:
    """Re-benchmark on save is off (never silently), naming what decided it (protocol/settings.py
    `distrust`) with advice that works there: the editor's window trust (VS Code's), the
    `trusted` the editor's settings send (it replaces the config file's), or the config file's.
    A `narrowed` pattern (one that matches the workspace only across a `/`, which earlier
    releases trusted) is named, so a user whose workspace lost its trust sees why."""
    from kernelscope.daemon.engine.workspace.user_config import config_path

    narrowed = (
        f" (`{why.narrowed}` does not cover it: `*` matches one folder name, never across /)"
        if why.narrowed
        else ""
    )
    reasons = []
    if why.window:
        reasons.append(
            "the editor has not trusted this window (trust it there: in VS Code, Manage Workspace Trust)"
        )
    if why.setting == "editor settings":
        reasons.append(
            f"the `trusted` your editor sends (its kernelscope initializationOptions, which replaces the "
            f'config file\'s) does not cover it{narrowed} (to trust it, add "{root}" to that list)'
        )
    elif why.setting is not None:
        reasons.append(
            f"`trusted` in {config_path()} does not cover it{narrowed} "
            f'(to trust it: `trusted = ["{root}"]` there, or add it to your list)'
        )
    return Notice(
        "information",
        "bench_on_save_off",
        "re-benchmark on save is off: this workspace is not trusted: "
        + "; and ".join(reasons)
        + "; measure now: `kernelscope bench`",
    )
