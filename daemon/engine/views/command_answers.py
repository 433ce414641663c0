"""What a command answered, in one line a person reads, for a client that shows no answer of
its own (Helix drops executeCommand's result: the daemon tells its user on the status line).
Answers with markdown (a history, a comparison) are shown as documents, not here.

One wording per command of protocol.vocabulary.COMMANDS whose answer has no markdown; a command
added without one is still shown, as its JSON (tests/engine/test_command_answers.py lists the
commands that have a sentence). The CLI's summaries (`memory summary`, the workspace command)
count masked and unreadable records in the words of `masked_counts`."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine import counted
from kernelscope.protocol.record_rules import REFERENCE_NAMES, format_score

TYPE_CHECKING = False
if TYPE_CHECKING:  # (the daemon imports this module at start: no pydantic model at run time)
    from kernelscope.protocol.commands import IterationResult, StopConditionStatus
    from kernelscope.protocol.workspace import WorkspaceSummary

log = logging.getLogger("kernelscope.views")


def masked_counts(info: WorkspaceSummary) -> str:
    """'N masked', and ', M unreadable' when records cannot be read (their masked flag is
    unknown: counted as neither), as `memory summary` and `kernelscope workspace` say it."""
    unreadable = f", {info.unreadable_count} unreadable" if info.unreadable_count else ""
    return f"{info.masked_count} masked{unreadable}"


def iteration_score(result: IterationResult) -> str:
    """An iteration's number, named by what it was timed against (`kernelscope iterate`, the
    demo): `1.75x vs v0`, or `0.28x vs reference` when there was no v0 code to time against."""
    if result.score is not None:
        return format_score(result.score, versus="v0")
    if result.speedup_vs_reference is not None:
        return format_score(result.speedup_vs_reference, versus=REFERENCE_NAMES[0])
    return "no score"


def stop_condition_line(status: StopConditionStatus) -> str:
    """`stop condition 'bandwidth >= 4.32TB/s': not met, measured 3870 vs 4320 GB/s`: the
    measurement and the target in the one unit the record stores them in; one not evaluated
    says so and why, with its target: `not evaluated (interpreter timings are not GPU
    figures), target 4320 GB/s`."""
    target = f"{status.target:g} {status.unit}"
    if status.met is None:
        return f"stop condition {status.text!r}: {status.state()}, target {target}"
    measured = "-" if status.measured is None else f"{status.measured:.4g}"
    note = f" ({status.note})" if status.note else ""
    return f"stop condition {status.text!r}: {status.state()}, measured {measured} vs {target}{note}"


def uncommitted_files_sentence(root: Path, paths: list[Path], message: str) -> str:
    """What a memory edit that commits nothing (`memory mask-half`, as the seed's memory tool)
    left in git: the files, that a checkout would undo them, and the one command that commits
    exactly them (restart and the demo commit their masks themselves)."""
    import shlex

    names = [path.relative_to(root).as_posix() for path in paths]
    git = f"git -C {shlex.quote(str(root))}"
    command = f"{git} add {shlex.join(names)} && {git} commit -m {shlex.quote(message)}"
    return (
        f"{', '.join(names)} changed and not committed (a `git checkout .` would undo it); "
        f"commit them with: `{command}`"
    )


def _versions(names: list[str], none: str) -> str:
    return ", ".join(names) if names else none


def mask_half_sentence(result: dict[str, Any]) -> str:
    """A mask-half's result in one line (Helix's status line, the demo's progress): what was
    masked, or why nothing was (half of one candidate is none), what was kept, what comes next."""
    if result.get("declined"):
        return "declined: nothing was masked"
    verb = "would mask" if result.get("dry_run") else "masked"
    masked = result.get("masked") or []
    said = f"{verb} {_versions(masked, 'nothing')} (seed {result.get('seed')}"
    if not masked:
        candidates = result.get("candidates") or []
        said += f"; candidates: {_versions(candidates, 'none')}, half of {len(candidates)} is none"
    said += ")"
    best, latest = result.get("best_version"), result.get("latest_passing_version")
    if best and latest and latest != best:
        said += f"; kept {best} as best and {latest} as the latest"
    elif best:
        said += f"; kept {best} as best"
    return f"{said}; next version {result.get('next_version')}"


def _unmask(result: dict[str, Any]) -> str:
    changed = result.get("changed") or []
    return f"unmasked {_versions(changed, '')}" if changed else "nothing to unmask: already unmasked"


def _record(result: dict[str, Any]) -> str:
    score = result.get("score")
    scored = "no score" if score is None else format_score(score)
    return f"recorded experiment {result.get('id')} ({scored}, {result.get('status')})"


def _started(result: dict[str, Any]) -> str:
    if result.get("declined"):
        return "declined: nothing was masked and no job started"
    where = Path(str(result.get("workspace") or "")).name
    return f"{result.get('kind')} started in {where}"


def _top(result: list[dict[str, Any]]) -> str:
    if not result:
        return "no experiments recorded"
    shown = [
        f"{r.get('id')} {'-' if r.get('score') is None else format_score(r['score'])}"
        + (f" ({r['change_summary']})" if r.get("change_summary") else "")
        for r in result
    ]
    return f"best {counted(len(result), 'experiment')}: " + "; ".join(shown)


def _cancel(result: dict[str, Any]) -> str:
    count = len(result.get("cancelled") or [])
    if not count:
        return "nothing to cancel: no job was running"
    return f"cancelled {counted(count, 'job')}"


_WORDING: dict[str, Callable[[Any], str]] = {
    "kernelscope.maskHalf": mask_half_sentence,
    "kernelscope.unmask": _unmask,
    "kernelscope.recordExperiment": _record,
    "kernelscope.runIteration": _started,
    "kernelscope.restart": _started,
    "kernelscope.benchmark": _started,
    "kernelscope.topExperiments": _top,
    "kernelscope.cancel": _cancel,
}
WORDED = frozenset(_WORDING)


def command_answer_line(command: str, result: Any) -> str:
    """`command: what it answered`, e.g. `kernelscope.cancel: nothing to cancel: no job was
    running`, on one line; an answer of a shape its wording does not know (a newer command, a
    field of another type) as its JSON: the command has run, and its answer must reach the
    person whatever its shape (a wording that raised turned the answer into an error)."""
    wording = _WORDING.get(command)
    try:
        said = wording(result) if wording is not None else _as_json(result)
    except Exception:  # a shape the wording does not know: shown as it is
        log.warning("no wording for %s's answer %r", command, result, exc_info=True)
        said = _as_json(result)
    return f"{command}: {' '.join(said.split())}"


def _as_json(result: Any) -> str:
    return json.dumps(result, separators=(",", ":"), default=str)
