"""Compare two versions: the kernel.py diff, per-configuration numbers, gates and actions.

Numbers keep their kind: per-configuration in-run speedups vs v0 (with their intervals) come
from the experiments `kernelscope iterate` recorded; per-shape latencies from the records
(`latency_us_by_shape`, atrex's per-workload latencies). The ratio of two latencies recorded
in different runs is shown as a latency ratio; a speedup of b over a is only claimed when a
is b's parent and the two were measured in one run.
"""

from __future__ import annotations

import difflib
from typing import Any

from kernelscope.daemon.engine import DataError, counted
from kernelscope.daemon.engine.history.timeline import History, VersionFacts, short
from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.memory.core import kernelscope_block, normalize_version
from kernelscope.daemon.engine.memory.stop_rule import readme_verdict
from kernelscope.daemon.engine.workspace.readme import parse_readme_file
from kernelscope.daemon.engine.workspace.workspace import README_NAME
from kernelscope.protocol.commands import recorded_stop_conditions
from kernelscope.protocol.history import ConfigDelta, ScoreValue, VersionComparison
from kernelscope.protocol.memory import as_float
from kernelscope.protocol.record_rules import format_score, section_get
from kernelscope.protocol.workspace import ReadmeInfo


def _facts(history: History, version: str) -> VersionFacts:
    normalized = normalize_version(version)
    facts = history.versions.get(normalized)
    if facts is None:
        known = ", ".join(history.versions) or "none"
        raise DataError(f"{normalized} has no readable memory record in {history.root} (versions: {known})")
    return facts


def _configs(facts: VersionFacts) -> dict[str, dict[str, Any]]:
    """config name -> {latency_us, speedup, ci, passed}: the experiment's measurement, else
    the record's per-shape latency."""
    found: dict[str, dict[str, Any]] = {}
    for experiment in reversed(facts.experiments):
        configs = experiment.metrics.get("configs") if isinstance(experiment.metrics, dict) else None
        if not isinstance(configs, dict):
            continue
        for name, config in configs.items():
            if not isinstance(config, dict):
                continue
            candidate_ms = as_float(config.get("candidate_ms"))
            ci = config.get("speedup_ci")
            found[str(name)] = {
                "latency_us": candidate_ms * 1000.0 if candidate_ms is not None else None,
                # v0's run timed it against the reference implementation: vs itself it is 1.00x
                "speedup": as_float(config.get("speedup")) if facts.number > 0 else None,
                "ci": tuple(ci) if isinstance(ci, (list, tuple)) and len(ci) == 2 else None,
                "passed": config.get("passed") if isinstance(config.get("passed"), bool) else None,
            }
        if found:
            return found
    if facts.effect.measured:
        for name, latency in atrex_fields.latency_by_shape(facts.record).items():
            found[name] = {"latency_us": latency, "speedup": None, "ci": None, "passed": None}
    return found


def _speedup(entry: dict[str, Any] | None) -> ScoreValue | None:
    if entry is None or entry.get("speedup") is None:
        return None
    return ScoreValue(
        value=entry["speedup"],
        kind="speedup",
        versus="v0",
        ci=entry.get("ci"),
        source="experiment.metrics.configs",
    )


def _gate_details(facts: VersionFacts, readme: ReadmeInfo | None) -> list[str]:
    record, effect = facts.record, facts.effect
    lines = [f"gate {effect.gate or '?'}"]
    if effect.outcome:
        lines.append(
            f"outcome {effect.outcome}"
            + (f", numbers carried from {effect.carried_from}" if effect.carried_from else "")
        )
    if effect.failure:
        lines.append(f"failure: {effect.failure}")
    gate = record.quality_gate
    reason = section_get(gate, "failure_reason")
    if isinstance(reason, str) and reason.strip() and not effect.passed:
        text = " ".join(reason.split())
        lines.append(f"reason: {text if len(text) <= 200 else text[:199] + '…'}")
    block = kernelscope_block(record)
    if block:
        if block.get("mode"):
            lines.append(f"mode {block['mode']}")
        if block.get("verdict"):
            band = block.get("noise_band")
            noise = (
                f" (A/A noise band {band[0]:.3f}-{band[1]:.3f})"
                if isinstance(band, list) and len(band) == 2
                else ""
            )
            lines.append(f"verdict {block['verdict']}{noise}")
    recorded = block.get("stop_conditions")
    conditions = recorded_stop_conditions(recorded)
    stored = {condition.text: condition for condition in conditions}
    judged = readme_verdict(readme, record)[0]
    for status in judged:
        # judged now by the one rule (stop_rule.py), as the lens and iterate judge it; what an
        # older rule stored (a best configuration's figure) is said where it differs
        was = stored.get(status.text)
        differs = f" (recorded: {was.state()})" if was is not None and was.met != status.met else ""
        lines.append(f"stop condition {status.text}: {status.state()}{differs}")
    # a stored status today's README does not state (a target since changed), or none to judge by
    today = {status.text for status in judged}
    for text, was in stored.items():
        if readme is None:
            lines.append(f"stop condition {text}: {was.state()} (recorded; no README.md to judge by)")
        elif text not in today:
            lines.append(f"stop condition recorded under an earlier README: {text}: {was.state()}")
    if block:
        # an entry left out unsaid makes the ones read look like all of them (one missed may be gone)
        unread = len(recorded) - len(conditions) if isinstance(recorded, list) else 0
        if unread:
            lines.append(
                f"{counted(unread, 'stop condition')} left out (entries this kernelscope cannot read)"
            )
        elif recorded is not None and not isinstance(recorded, list):  # (a lone entry, a word)
            lines.append(
                "stop conditions left out (recorded as no list of entries this kernelscope can read)"
            )
    if facts.kernel_origin:
        lines.append(f"kernel.py from {facts.kernel_origin}")
    return lines


def _action(facts: VersionFacts) -> str | None:
    section = facts.record.optimization
    value = (
        section.get("action_description")
        if isinstance(section, dict)
        else getattr(section, "action_description", None)
    )
    return " ".join(str(value).split()) if value else None


def compare_versions(history: History, version_a: str, version_b: str) -> VersionComparison:
    """Everything that differs between two versions, and the markdown a client shows."""
    a, b = _facts(history, version_a), _facts(history, version_b)
    # (read now, not with the cached history: its stop conditions judge both versions)
    readme_path = history.root / README_NAME
    readme = parse_readme_file(readme_path) if readme_path.is_file() else None
    messages: list[str] = []
    text_a = history.source_of(a.kernel_blob) if a.kernel_blob else None
    text_b = history.source_of(b.kernel_blob) if b.kernel_blob else None
    for facts, text in ((a, text_a), (b, text_b)):
        if text is None:
            messages.append(
                f"{facts.version}: no kernel.py in git for this version "
                "(no commit, failed ref or episode branch)"
            )
    diff = ""
    if text_a is not None and text_b is not None:
        diff = "".join(
            difflib.unified_diff(
                text_a.splitlines(keepends=True),
                text_b.splitlines(keepends=True),
                fromfile=f"{a.version}/kernel.py",
                tofile=f"{b.version}/kernel.py",
            )
        )
    configs_a, configs_b = _configs(a), _configs(b)
    deltas = []
    for name in list(dict.fromkeys([*configs_a, *configs_b])):
        left, right = configs_a.get(name), configs_b.get(name)
        latency_a = left.get("latency_us") if left else None
        latency_b = right.get("latency_us") if right else None
        deltas.append(
            ConfigDelta(
                config=name,
                a_latency_us=latency_a,
                b_latency_us=latency_b,
                latency_ratio=latency_a / latency_b if latency_a and latency_b else None,
                a_speedup=_speedup(left),
                b_speedup=_speedup(right),
                a_passed=left.get("passed") if left else None,
                b_passed=right.get("passed") if right else None,
            )
        )
    ratio = None
    if b.effect.vs_parent is not None and b.effect.vs_parent.versus == a.version:
        ratio = b.effect.vs_parent
    elif a.effect.score and b.effect.score:
        messages.append(
            f"{a.version} and {b.version} were not measured against each other in one run: "
            f"compare their scores vs v0 ({a.effect.score.text()} and {b.effect.score.text()})"
        )
    latencies = atrex_fields.comparable_latencies(a.record, b.record, (a.version, b.version))
    comparison = VersionComparison(
        latency_figure=latencies.figure,
        latency_a_us=latencies.a,
        latency_b_us=latencies.b,
        latency_note=latencies.why,
        workspace=str(history.root),
        a=a.effect,
        b=b.effect,
        code_diff=diff,
        code_available=text_a is not None and text_b is not None,
        code_a=text_a,
        code_b=text_b,
        configs=deltas,
        score_ratio=ratio,
        gate_details={a.version: _gate_details(a, readme), b.version: _gate_details(b, readme)},
        messages=messages,
    )
    comparison.markdown = comparison_markdown(comparison, {a.version: _action(a), b.version: _action(b)})
    return comparison


def _number(value: float | None, spec: str = ".3g", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _config_cell(speedup: ScoreValue | None, passed: bool | None) -> str:
    if passed is False:
        return "FAIL"
    return speedup.text().replace(" vs v0", "") if speedup else "-"


def comparison_markdown(comparison: VersionComparison, actions: dict[str, str | None] | None = None) -> str:
    """The comparison as Markdown (hover, a webview, the terminal)."""
    a, b = comparison.a, comparison.b
    lines = [f"## {a.version} → {b.version}", ""]
    lines += ["| | " + a.version + " | " + b.version + " |", "|---|---|---|"]
    lines.append(f"| gate | {a.gate or '-'} | {b.gate or '-'} |")
    lines.append(
        f"| score (vs v0) | {a.score.text() if a.score else '-'} | {b.score.text() if b.score else '-'} |"
    )
    parents = [e.vs_parent.text() if e.vs_parent else "-" for e in (a, b)]
    lines.append(f"| vs its parent | {parents[0]} | {parents[1]} |")
    if a.vs_reference is not None or b.vs_reference is not None:
        references = [
            "-"
            if e.vs_reference is None
            else format_score(e.vs_reference, aggregate=e.vs_reference_aggregate)
            for e in (a, b)
        ]
        lines.append(f"| vs reference | {references[0]} | {references[1]} |")
    # one figure for both (atrex_fields.comparable_latencies), named; else each record's own
    both = a.latency_us is not None and b.latency_us is not None  # (each a measurement of its own)
    figure = comparison.latency_figure if both else None
    values = [comparison.latency_a_us, comparison.latency_b_us] if figure else [a.latency_us, b.latency_us]
    latencies = [
        _number(value) + (f" ({e.latency_coverage})" if e.latency_coverage else "")
        for value, e in zip(values, (a, b), strict=True)
    ]
    label = f"latency (us, {figure})" if figure else "latency (us)"
    if both and comparison.latency_note:
        label = f"latency (us; {comparison.latency_note})"
    lines.append(f"| {label} | {latencies[0]} | {latencies[1]} |")
    lines.append(f"| commit | {short(a.commit) or '-'} | {short(b.commit) or '-'} |")
    if comparison.score_ratio is not None:
        how = (
            "measured in one run"
            if comparison.score_ratio.in_one_run
            else "from the two records, not measured in one run"
        )
        lines += ["", f"**{b.version} vs {a.version}** ({how}): {comparison.score_ratio.text()}"]
    actions = actions or {}
    lines += ["", "### Actions"]
    for effect in (a, b):
        description = actions.get(effect.version) or effect.action or "-"
        category = f" ({effect.category})" if effect.category else ""
        lines.append(f"- **{effect.version}**{category}: {description}")
    lines += ["", "### Gates"]
    for version, details in comparison.gate_details.items():
        lines.append(f"- **{version}**: " + "; ".join(details))
    if comparison.configs:
        lines += [
            "",
            "### Per configuration",
            "",
            f"| config | {a.version} latency (us) | {b.version} latency (us) "
            f"| latency ratio {a.version}/{b.version} "
            f"| {a.version} speedup vs v0 | {b.version} speedup vs v0 |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for delta in comparison.configs:
            lines.append(
                f"| {delta.config} | {_number(delta.a_latency_us)} | {_number(delta.b_latency_us)} "
                f"| {_number(delta.latency_ratio, '.2f', 'x')} "
                f"| {_config_cell(delta.a_speedup, delta.a_passed)} "
                f"| {_config_cell(delta.b_speedup, delta.b_passed)} |"
            )
    if comparison.messages:
        lines += ["", *[f"> {message}" for message in comparison.messages]]
    lines += ["", "### kernel.py"]
    if comparison.code_diff:
        lines += ["", "```diff", comparison.code_diff.rstrip("\n"), "```"]
    elif comparison.code_available:
        lines += ["", "identical"]
    else:
        lines += ["", "not available"]
    return "\n".join(lines) + "\n"
