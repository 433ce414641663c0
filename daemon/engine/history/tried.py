"""Values already tried: for each meta-parameter in the editor's kernel.py (launch keywords
such as BLOCK_SIZE=..., num_warps, num_stages, grid expressions, triton.Config entries,
UPPER_CASE module constants, constexpr defaults), the values earlier versions used at the same
spot and how those versions scored: `tried: 64 1.00x v0 · 256 3.20x v1 · 1024 12.50x v2`.

Each version's kernel.py is analysed once by `ast` (cached by blob), so a hint is a table
lookup. Experiments in the store that record their parameters
(`metrics.params`/`metrics.meta_params`: `{"BLOCK_SIZE": 1024, "num_warps": 4}`) add rows
for the spots with that name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kernelscope.daemon.engine.history.source import FACTS, Spot
from kernelscope.daemon.engine.history.timeline import History, VersionFacts
from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.memory.scores import VersionScore, best_score
from kernelscope.protocol.experiment import KernelExperiment
from kernelscope.protocol.history import ScoreValue, TriedHint, TriedValue
from kernelscope.protocol.memory import as_float
from kernelscope.protocol.record_rules import SCORE_KIND_WORDS

PARAM_KEYS = ("params", "meta_params", "meta", "launch_params")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@dataclass
class _Use:
    """One version (or experiment) that used a value at a spot."""

    label: str
    number: int  # version number; experiments sort after versions
    passed: bool
    measured: bool
    masked: bool
    score: ScoreValue | None
    facts: VersionFacts | None = None
    experiment: KernelExperiment | None = None
    outcome: str | None = None  # an episode outcome (pivot...): neither a pass nor a failure
    ranked: bool = False  # it can be the best: its gate passed and it was measured

    def __post_init__(self) -> None:
        if self.facts is not None:
            self.outcome = self.facts.effect.outcome
        self.ranked = self.passed and self.measured and self.score is not None


@dataclass
class _Table:
    values: dict[str, dict[str, list[_Use]]] = field(default_factory=dict)  # spot key -> value -> uses
    params: list[tuple[str, str, tuple[str, ...], _Use]] = field(
        default_factory=list
    )  # name, value, kernels, use


def _use_of(facts: VersionFacts) -> _Use:
    effect = facts.effect
    return _Use(
        label=facts.version,
        number=facts.number,
        passed=effect.passed and not effect.outcome,
        measured=effect.measured,
        masked=facts.masked,
        score=effect.score,
        facts=facts,
    )


def _add_uses(table: _Table, pairs: tuple[tuple[str, str], ...], use: _Use) -> None:
    values = table.values
    for key, value in pairs:
        by_value = values.get(key)
        if by_value is None:
            values[key] = {value: [use]}
            continue
        uses = by_value.get(value)
        if uses is None:
            by_value[value] = [use]
        else:
            uses.append(use)


def _build_table(history: History) -> _Table:
    table = _Table()
    for facts in history.versions.values():
        analysed = history.facts.get(facts.kernel_blob) if facts.kernel_blob else None
        if analysed is None:
            continue
        _add_uses(table, analysed.pairs, _use_of(facts))
    version_blobs = {f.kernel_blob for f in history.versions.values() if f.kernel_blob}
    for kernel in history.tried_kernels:
        # kernels tried beside the versions: atrex episode trials and checkpoints, experiments
        if kernel.version is not None or kernel.blob in version_blobs:
            continue
        analysed = history.facts.get(kernel.blob)
        if analysed is None:
            continue
        use = _Use(
            label=kernel.short_label or kernel.label,
            number=10**6 + kernel.order,
            passed=kernel.passed is not False,
            measured=kernel.score is not None,
            masked=False,
            score=kernel.score,
        )
        _add_uses(table, analysed.pairs, use)
    experiments = [e for f in history.versions.values() for e in f.experiments if f.kernel_blob is None]
    for experiment in [*history.unversioned_experiments, *experiments]:
        metrics = experiment.metrics if isinstance(experiment.metrics, dict) else {}
        params: dict[str, Any] = {}
        for key in PARAM_KEYS:
            if isinstance(metrics.get(key), dict):
                params.update(metrics[key])
        if not params:
            continue
        failed = experiment.is_buggy or experiment.status in ("failed", "timeout")
        score = (
            ScoreValue.model_construct(
                value=experiment.score, kind="speedup", versus="baseline", ci=None, source="experiment.score"
            )
            if experiment.score and not failed
            else None
        )
        use = _Use(
            label=experiment.memory_version or f"exp {experiment.id[:8]}",
            number=10**9,
            passed=not failed,
            measured=score is not None,
            masked=False,
            score=score,
            experiment=experiment,
        )
        for name, value in params.items():
            if isinstance(value, (int, float, str, bool)):
                shown = value if isinstance(value, str) and _NUMBER.fullmatch(value) else None
                shown = shown or (repr(value) if isinstance(value, str) else str(value))
                table.params.append((str(name), shown, tuple(experiment.kernels), use))
    return table


def _config_scores(history: History, facts: VersionFacts) -> dict[str, ScoreValue]:
    """Per configuration/shape: the in-run speedup vs v0 the experiment recorded, else the
    ratio of the recorded per-shape latency to v0's (once per version and history state)."""
    cache = history.memo.setdefault("config_scores", {})
    if facts.version not in cache:
        cache[facts.version] = _compute_config_scores(history, facts)
    return cache[facts.version]


def _compute_config_scores(history: History, facts: VersionFacts) -> dict[str, ScoreValue]:
    found: dict[str, ScoreValue] = {}
    if facts.number == 0:
        return found  # the baseline: 1.00x everywhere by definition (its run timed it vs the reference)
    for experiment in reversed(facts.experiments):
        configs = experiment.metrics.get("configs") if isinstance(experiment.metrics, dict) else None
        if isinstance(configs, dict):
            for name, config in configs.items():
                if isinstance(config, dict) and as_float(config.get("speedup")):
                    ci = config.get("speedup_ci")
                    found[str(name)] = ScoreValue.model_construct(
                        value=float(config["speedup"]),
                        kind="speedup",
                        versus="v0",
                        ci=tuple(ci) if isinstance(ci, (list, tuple)) and len(ci) == 2 else None,
                        source="experiment.metrics.configs",
                    )
            if found:
                return found
    base = history.versions.get("v0")
    if base is None or not facts.effect.measured:
        return found
    mine, theirs = atrex_fields.latency_by_shape(facts.record), atrex_fields.latency_by_shape(base.record)
    for name, latency in mine.items():
        if theirs.get(name) and latency > 0:
            found[name] = ScoreValue.model_construct(
                value=theirs[name] / latency,
                kind="latency_ratio",
                versus="v0",
                ci=None,
                source="performance.latency_us_by_shape",
            )
    return found


def _compact(values: list[str]) -> dict[str, str]:
    """Long values that differ only in numbers (grid expressions) are shown by their numbers:
    `(triton.cdiv(n, 1024),)` -> `1024`."""
    if all(len(v) <= 12 for v in values):
        return {v: v for v in values}
    shapes = {_NUMBER.sub("#", v) for v in values}
    if len(shapes) != 1:
        return {v: (v if len(v) <= 40 else v[:39] + "…") for v in values}
    numbers = [_NUMBER.findall(v) for v in values]
    varying = [i for i in range(len(numbers[0])) if len({tuple(n)[i] for n in numbers}) > 1]
    if not varying:
        return {v: v for v in values}
    return {v: ",".join(n[i] for i in varying) for v, n in zip(values, numbers, strict=True)}


def _sort_key(value: str) -> tuple[int, float, str]:
    number = as_float(value) if _NUMBER.fullmatch(value.strip()) else None
    return (0, number, value) if number is not None else (1, 0.0, value)


@dataclass
class _Row:
    """A value's row and what its table cell needs."""

    value: TriedValue
    failed: list[_Use]  # failed gate (not an episode outcome), oldest first
    outcomes: dict[str, int]
    last_passed: _Use | None


def _best_use(uses: list[_Use]) -> _Use | None:
    """The use of a value the one best rule names (memory/scores.py best_score: the highest
    score, a tie to the later), among those that can be the best; `uses` in history order."""
    ranked = [u for u in uses if u.ranked]
    top = best_score(
        [VersionScore(str(i), u.score.value if u.score else None, True) for i, u in enumerate(ranked)]
    )
    return None if top is None else ranked[int(top.version)]


def _value_row(history: History, value: str, uses: list[_Use], current: bool, include_masked: bool) -> _Row:
    # Uses arrive in history order (versions by number, then trials, then experiments).
    visible = uses if include_masked else [u for u in uses if not u.masked]
    passed = 0
    failed: list[_Use] = []
    outcomes: dict[str, int] = {}
    last_passed = None
    best = _best_use(visible)
    for use in visible:
        if use.passed:
            passed += 1
            last_passed = use
        elif use.outcome:
            outcomes[use.outcome] = outcomes.get(use.outcome, 0) + 1
        else:
            failed.append(use)
    row = TriedValue.model_construct(
        value=value,
        versions=[u.label for u in visible],
        passed=passed,
        failed=len(visible) - passed,
        best_version=best.label if best else None,
        best_score=best.score if best else None,
        current=current,
        masked_only=bool(uses) and not visible,
        by_config=_config_scores(history, best.facts) if best and best.facts else {},
    )
    return _Row(row, failed, outcomes, last_passed)


def _cell(shown: str, row: _Row, name_kind: bool) -> str:
    value = row.value
    if value.masked_only:
        return f"{shown} (masked)"
    if value.best_score is not None:
        others = value.passed - 1
        extra = [f"+{others}"] if others > 0 else []
        extra += [f"{len(row.failed)} FAIL"] if row.failed else []
        extra += [f"{count} {label}" for label, count in sorted(row.outcomes.items())]
        more = f" ({', '.join(extra)})" if extra else ""
        named = SCORE_KIND_WORDS.get(value.best_score.kind) if name_kind else None
        kind = f" {named}" if named else ""
        return f"{shown} {value.best_score.value:.2f}x{kind} {value.best_version}{more}"
    if row.last_passed is not None:
        return f"{shown} {row.last_passed.label}"
    if row.failed:
        return f"{shown} FAIL {row.failed[-1].label}"
    if row.outcomes:
        label = sorted(row.outcomes)[0]
        return f"{shown} {label} {value.versions[-1]}"
    return shown


def tried_hints(history: History, buffer: str | None = None, include_masked: bool = False) -> list[TriedHint]:
    """One TriedHint per meta-parameter spot of `buffer` (None: HEAD's kernel.py) where
    history holds another value than the buffer's, or the buffer's value is new."""
    return history.per_buffer(
        f"tried:{include_masked}", buffer, lambda: _tried_hints(history, buffer, include_masked)
    )


def _tried_hints(history: History, buffer: str | None, include_masked: bool) -> list[TriedHint]:
    text = buffer if buffer is not None else history.head_text()
    if not text:
        return []
    facts = FACTS.get(text)
    table = history.analyzed(_build_table)
    hints: list[TriedHint] = []
    for spot in facts.spots:
        hint = _hint_for(history, table, spot, include_masked)
        if hint is not None:
            hints.append(hint)
    return hints


def _hint_for(history: History, table: _Table, spot: Spot, include_masked: bool) -> TriedHint | None:
    """The hint at a spot; its rows and text depend only on the spot's key and value, so they
    are computed once per history state and only the position comes from the buffer."""
    cache = history.memo.setdefault(("tried_rows", include_masked), {})
    found = cache.get((spot.key, spot.label, spot.kernel, spot.value))
    if found is None:
        found = cache[(spot.key, spot.label, spot.kernel, spot.value)] = _rows_for(
            history, table, spot, include_masked
        )
    if found is False:
        return None
    rows, text, verdict = found
    # A hint is its spot (same field names: what, where, the value here) and what was tried there.
    return TriedHint.model_construct(**spot._asdict(), values=rows, hint=text, verdict=verdict)


def _rows_for(
    history: History, table: _Table, spot: Spot, include_masked: bool
) -> tuple[list[TriedValue], str, str] | bool:
    values: dict[str, list[_Use]] = {k: list(v) for k, v in table.values.get(spot.key, {}).items()}
    for name, value, kernels, use in table.params:
        if name == spot.label and (not kernels or spot.kernel in kernels):
            values.setdefault(value, []).append(use)
    if not values:
        return False
    distinct = set(values) | {spot.value}
    if len(distinct) < 2:
        return False  # one value ever, and the buffer keeps it: nothing to tell
    rows = [
        _value_row(history, value, uses, value == spot.value, include_masked)
        for value, uses in values.items()
    ]
    rows = [row for row in rows if include_masked or not row.value.masked_only or row.value.current]
    if not rows:
        return False
    shown = _compact([row.value.value for row in rows] + [spot.value])
    rows.sort(key=lambda row: _sort_key(shown[row.value.value]))
    scores = [row.value.best_score for row in rows if row.value.best_score is not None]
    kinds = {score.kind for score in scores}
    head = "tried"
    if len(kinds) == 1 and next(iter(kinds)) in SCORE_KIND_WORDS:  # (a ratio vs v0: named once)
        head = f"tried ({SCORE_KIND_WORDS[next(iter(kinds))]} vs v0)"
    elif kinds == {"speedup"} and any(score.versus == "baseline" for score in scores):
        head = "tried (speedup vs baseline)"
    cells = [_cell(shown[row.value.value], row, len(kinds) > 1) for row in rows]
    text = f"{head}: " + " · ".join(cells)
    if spot.value not in values:
        text += f" · {shown[spot.value]} new"
    # the same cells as a verdict on the buffer's value, for the near-match diagnostic
    here = next((cell for row, cell in zip(rows, cells, strict=True) if row.value.current), None)
    others = [
        cell.replace(" ", " -> ", 1) for row, cell in zip(rows, cells, strict=True) if not row.value.current
    ]
    verdict = f"{shown[spot.value]} " + (f"tried: {here.split(' ', 1)[1]}" if here else "never tried")
    if others:
        verdict += "; " + ", ".join(others)
    return [row.value for row in rows], text, verdict
