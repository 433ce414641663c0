"""Reads a workspace README.md as people and agents write it.

Real READMEs (atrex-style gpu-kernel-optimizer workspaces) are free-form Markdown:
`## Target` bullets, a correctness threshold such as `rel_err < 0.01`, hardware figures cited
as `<metric>: <value> <unit> <- <source>` (or `UNKNOWN`), and `## Stop Conditions` bullets
such as `- memory-bound target: bandwidth >= 3.87TB/s`. This module extracts them without
ever rewriting the file. An optional fenced block tagged `kernelscope` holding JSON (see the
README's "Machine-readable block") wins over the prose when present.

Nothing here raises on odd input: problems become `notes` (warnings with their line and kind,
e.g. a stop condition it cannot check; `warnings` says them as sentences) or `errors` (e.g. an
invalid machine block) on the returned `ReadmeInfo`.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelscope.daemon.engine import load_json
from kernelscope.daemon.engine.workspace import readme_conditions
from kernelscope.daemon.engine.workspace import readme_lines as lines_of
from kernelscope.protocol import workspace_files
from kernelscope.protocol.workspace import (
    Comparator,
    CorrectnessThreshold,
    HardwareSpec,
    ReadmeInfo,
    ReadmeWarning,
    StopCondition,
    TargetInfo,
)

_KEY_VALUE = re.compile(r"^\**([A-Za-z][\w /-]*?)\**\s*:\s*(.*)$")
_REL_ERR = re.compile(
    r"\b(rel(?:ative)?[_ ]err(?:or)?)\s*" + lines_of.COMPARATOR + r"\s*" + lines_of.NUMBER, re.I
)
_SPEC_KNOWN = re.compile(
    r"^\s*(?:[-*+]\s+)?\**(?P<metric>[^:\n<]+?)\**\s*:\s*(?P<value>[-+]?"
    + lines_of.NUMBER
    + r")\s*(?P<unit>[^\s<]+)?\s*<-\s*(?P<source>.+?)\s*$"
)
_SPEC_UNKNOWN = re.compile(
    r"^\s*(?:[-*+]\s+)?\**(?P<metric>[^:\n<]+?)\**\s*:\s*UNKNOWN\b(?:.*?<-\s*(?P<source>.+?))?\s*$"
)
_DTYPE_BEFORE = re.compile(r"\b(fp64|fp32|tf32|fp16|bf16|fp8|fp4|int8|int4|e4m3|e5m2)\b", re.I)
_TRAILING_NOTE = re.compile(r"\s*\((?:parsed|derived|from|see|e\.g\.)[^()]*\)\s*$", re.I)
# Every spelling `lines_of.COMPARATOR` matches -> its canonical comparator.
_COMPARATOR_CANON: dict[str, Comparator] = {
    ">=": ">=",
    "<=": "<=",
    ">": ">",
    "<": "<",
    "≥": ">=",
    "≤": "<=",
    "=>": ">=",
    "=<": "<=",
}
_TARGET_KEYS = {
    "platform": "platform",
    "gpu": "platform",
    "arch": "arch",
    "architecture": "arch",
    "framework": "framework",
    "dtype": "dtype",
    "kernel type": "kernel_type",
    "kernel_type": "kernel_type",
    "runtime architecture": "arch",
}
_DIGEST_SECTIONS = ("goal", "config", "campaign", "ground truth")
_BACKTICKED = re.compile(r"^`([^`]*)`")
# A target the README says it does not know: `UNKNOWN` (the seeds' hardware specs), atrex's
# `unknown (use the runtime GPU API before choosing codegen)` for an arch it was not given
# (orchestrator/campaign.py @16f7ec4 L895): no value, never shown as one.
_UNKNOWN_VALUE = re.compile(r"^unknown\b(?:\s*\(.*\))?\s*$", re.I)
_WORKLOADS = re.compile(r"^workloads?\b[^:]*:\s*`?(\d+)\b", re.I)
_BOLD_LEAD = re.compile(r"^\*\*(.+?)\*\*")


def parse_readme_file(path: Path) -> ReadmeInfo:
    """Parse README.md at `path`; a missing or unreadable file is an error on the result."""
    try:
        text = workspace_files.read_text(path, errors="replace")
    except OSError as exc:
        return ReadmeInfo(path=str(path), errors=[f"cannot read {path}: {exc.strerror or exc}"])
    return parse_readme(text, str(path))


def parse_readme(text: str, path: str = "README.md") -> ReadmeInfo:
    """Parse README text. Never raises for content; see the module docstring."""
    lines = text.splitlines()
    sections = lines_of.split_sections(lines)
    warnings: list[ReadmeWarning] = []
    errors: list[str] = []

    target = _parse_target(sections, warnings)
    unchecked: list[str] = []
    stop_conditions = _parse_stop_conditions(sections, warnings, unchecked)
    stated = _stated_stop_conditions(sections, stop_conditions)
    threshold = _parse_threshold(lines)
    specs = _parse_hardware_specs(lines)
    digest = _targets_digest(sections, specs, lines)

    info = ReadmeInfo(
        path=path,
        target=target,
        correctness_threshold=threshold,
        hardware_specs=specs,
        stop_conditions=stop_conditions,
        targets_digest=digest,
        goal=_parse_goal(sections),
        workload_count=_parse_workload_count(sections),
        stated_stop_conditions=stated,
        unchecked_stop_conditions=unchecked,
        notes=warnings,
        errors=errors,
    )
    block = lines_of.find_machine_block(lines)
    if block is not None:
        _apply_machine_block(info, *block)
    if not info.stop_conditions and (info.goal or info.stated_stop_conditions):
        info.notes.append(
            ReadmeWarning(
                code="readme:no-measurable-stop-condition",
                message="README states a goal but no measurable stop condition: kernelscope shows "
                "progress against the goal (today's atrex keeps numeric stop conditions as "
                "orchestrator flags such as --max-iters and --max-stall; its --target-util only "
                "where the README states it: `Target utilization stop condition: 90%`); add a "
                "```kernelscope block with stop_conditions to have the target checked",
            )
        )
    elif not info.stop_conditions:
        info.notes.append(
            ReadmeWarning(
                code="readme:no-stop-conditions",
                message="README has no stop conditions: add bullets under '## Stop Conditions' "
                "such as '- memory-bound target: bandwidth >= 3.87TB/s' (or a ```kernelscope "
                "block); without them kernelscope cannot tell when the target is met",
            )
        )
    return info


# -- sections ---------------------------------------------------------------------------


def _target_sections(sections: list[lines_of.Section]) -> list[lines_of.Section]:
    """`## Target` first, then `## Task Context`, `## Config`, `## Campaign`: the order in which
    they fill in what the earlier ones left out."""
    return [s for needle in lines_of.TARGET_SECTIONS for s in lines_of.sections_named(sections, needle)]


# -- target -----------------------------------------------------------------------------


def _parse_target(sections: list[lines_of.Section], warnings: list[ReadmeWarning]) -> TargetInfo:
    values: dict[str, str] = {}
    other: dict[str, str] = {}
    # `## Target` first; `## Task Context` (atrex template) and today's `## Config` /
    # `## Campaign` only fill what is missing.
    for section in _target_sections(sections):
        if "stop" in section.key or "isa" in section.key:
            continue
        for line_no, bullet in lines_of.bullets(section):
            match = _KEY_VALUE.match(bullet)
            if not match:
                continue
            key = match.group(1).strip().lower().replace("_", " ")
            if key.startswith("target ") and key[len("target ") :] in _TARGET_KEYS:
                key = key[len("target ") :]  # `Target platform: \`B200\``
            value = _TRAILING_NOTE.sub("", match.group(2).strip())
            quoted = _BACKTICKED.match(value)
            if quoted:
                value = quoted.group(1).strip()  # `\`Triton\` (V0 starts as PyTorch; ...)`
            if not value:
                continue
            if lines_of.PLACEHOLDER.search(value) and lines_of.PLACEHOLDER.sub("", value).strip(" /.,") == "":
                warnings.append(
                    ReadmeWarning(
                        code="readme:target-placeholder",
                        message=f"'{key}' is still a template placeholder",
                        line=line_no,
                    )
                )
                continue
            if _UNKNOWN_VALUE.match(value):
                continue  # atrex's "`unknown (use the runtime GPU API ...)`": not stated
            field = _TARGET_KEYS.get(key) or _TARGET_KEYS.get(key.replace(" ", "_"))
            if field:
                values.setdefault(field, value)
            else:
                other.setdefault(key, value)
    return TargetInfo(**values, other=other)


def _parse_goal(sections: list[lines_of.Section]) -> str | None:
    """The first statement of `## Goal`: its bold lead when it has one, else its first sentence."""
    for section in lines_of.sections_named(sections, "goal"):
        text = " ".join(line.strip() for line in section.lines if line.strip())
        if not text:
            continue
        bold = _BOLD_LEAD.match(text)
        if bold:
            return bold.group(1).strip()
        return re.split(r"(?<=[.!?])\s|\s\(", text, maxsplit=1)[0].strip()[:200]
    return None


def _parse_workload_count(sections: list[lines_of.Section]) -> int | None:
    """`Workloads (shape set): 3 in workload.jsonl` in `## Config` -> 3."""
    for section in _target_sections(sections):
        for _, bullet in lines_of.bullets(section):
            match = _WORKLOADS.match(bullet)
            if match:
                return int(match.group(1))
    return None


# -- stop conditions --------------------------------------------------------------------


def parse_condition(text: str, line: int | None = None) -> StopCondition | None:
    """One stop condition from a bullet's text, or None when it states no target kernelscope
    can check (`read_condition` says why)."""
    condition = read_condition(text, line)
    return condition if isinstance(condition, StopCondition) else None


def read_condition(text: str, line: int | None = None) -> StopCondition | str | None:
    """One stop condition from a bullet's text; why not (a reason) when it compares something
    kernelscope cannot check (readme_conditions.read_condition); None when it states no target."""
    target = readme_conditions.read_condition(text)
    if not isinstance(target, readme_conditions.Target):
        return target
    comparator = _COMPARATOR_CANON[target.comparator]
    kind, scale = lines_of.UNIT_KIND_SCALE[target.unit.lower()]
    head = text[: target.start]
    label = text.split(":", 1)[0].strip() if ":" in head else None
    dtype = None
    if kind == "tflops":
        dtypes = _DTYPE_BEFORE.findall(head)
        dtype = dtypes[-1].lower() if dtypes else None
    return StopCondition(
        kind=kind,
        comparator=comparator,
        value=target.value,
        unit=target.unit,
        normalized_value=target.value * scale,
        dtype=dtype,
        label=label,
        text=text,
        line=line,
        target_text=target.written,
    )


def _parse_stop_conditions(
    sections: list[lines_of.Section], warnings: list[ReadmeWarning], unchecked: list[str]
) -> list[StopCondition]:
    """The bullets kernelscope can check; those that compare a number it cannot read on a metric
    it measures go to `unchecked`, each with a warning (a bullet in words, an iteration cap, a
    speedup, a utilization or a correctness threshold: neither)."""
    conditions: list[StopCondition] = []
    for line_no, bullet, placeholder in lines_of.stop_condition_bullets(sections):
        if placeholder:  # before parsing: a template's example reads as a target
            warnings.append(
                ReadmeWarning(
                    code="readme:stop-condition-placeholder",
                    message=f"stop condition is still a template placeholder: {bullet[:80]}",
                    line=line_no,
                )
            )
            continue
        condition = read_condition(bullet, line_no)
        further = (
            readme_conditions.further_comparison(bullet) if isinstance(condition, StopCondition) else None
        )
        if further is not None:  # (one bullet, one condition: the second is said, not dropped)
            unchecked.append(further[:200])
            warnings.append(
                ReadmeWarning(
                    code="readme:stop-condition-skipped",
                    message="stop condition skipped, kernelscope reads one comparison a bullet: "
                    f"{further[:80]!r} is not read; write it as a bullet of its own",
                    line=line_no,
                )
            )
        if isinstance(condition, StopCondition):
            conditions.append(condition)
        elif condition is not None:
            unchecked.append(bullet.replace("`", "")[:200])
            warnings.append(
                ReadmeWarning(
                    code="readme:stop-condition-skipped",
                    message="stop condition skipped, kernelscope cannot check it: "
                    f"{' '.join(bullet.split())[:80]!r}: "
                    f"{condition}; {readme_conditions.EXPECTED}",
                    line=line_no,
                )
            )
    return conditions


def _stated_stop_conditions(sections: list[lines_of.Section], parsed: list[StopCondition]) -> list[str]:
    """Stop conditions stated in words: the stop-condition bullets (lines_of.stop_condition_bullets)
    that state no target kernelscope checks (`Max iterations stop condition: 20`)."""
    parsed_lines = {c.line for c in parsed}
    return [
        bullet.replace("`", "")[:200]
        for line_no, bullet, placeholder in lines_of.stop_condition_bullets(sections)
        if line_no not in parsed_lines and not placeholder
    ]


# -- threshold and hardware specs -------------------------------------------------------


def _parse_threshold(lines: list[str]) -> CorrectnessThreshold | None:
    for index, line in enumerate(lines):
        if lines_of.PLACEHOLDER.fullmatch(line.strip()):
            continue
        match = _REL_ERR.search(line)
        if match:
            comparator = _COMPARATOR_CANON[match.group(2)]
            if comparator not in ("<", "<="):
                continue
            return CorrectnessThreshold(
                metric="rel_err",
                comparator=comparator,
                value=float(match.group(3)),
                line=index + 1,
            )
    return None


def _parse_hardware_specs(lines: list[str]) -> list[HardwareSpec]:
    specs: list[HardwareSpec] = []
    for index, line in enumerate(lines):
        known = _SPEC_KNOWN.match(line)
        if known:
            specs.append(
                HardwareSpec(
                    metric=known.group("metric").strip(),
                    value=float(known.group("value")),
                    unit=known.group("unit"),
                    source=known.group("source").strip(),
                    known=True,
                    line=index + 1,
                )
            )
            continue
        unknown = _SPEC_UNKNOWN.match(line)
        if unknown:
            source = unknown.group("source")
            specs.append(
                HardwareSpec(
                    metric=unknown.group("metric").strip(),
                    known=False,
                    source=source.strip() if source else None,
                    line=index + 1,
                )
            )
    return specs


def _targets_digest(sections: list[lines_of.Section], specs: list[HardwareSpec], lines: list[str]) -> str:
    """A hash of what an agent must not change: targets, stop conditions, hardware specs."""
    hasher = hashlib.sha256()
    for section in sections:
        if (
            ("target" in section.key and "isa" not in section.key)
            or "stop" in section.key
            or any(needle in section.key for needle in _DIGEST_SECTIONS)
        ):
            hasher.update(section.key.encode())
            for line in section.lines:
                hasher.update(line.rstrip().encode() + b"\n")
    for spec in specs:
        if spec.line is not None:
            hasher.update(lines[spec.line - 1].rstrip().encode() + b"\n")
    block = lines_of.find_machine_block(lines)
    if block is not None:
        hasher.update(block[0].encode())
    return hasher.hexdigest()


# -- machine-readable block -------------------------------------------------------------


def _apply_machine_block(info: ReadmeInfo, body: str, line: int) -> None:
    """Let the machine block override what the prose said, field by field."""
    try:
        data: Any = load_json(body)
    except json.JSONDecodeError as exc:
        info.errors.append(
            f"README line {line + exc.lineno}: the ```kernelscope block is not valid JSON "
            f"({exc.msg}); using the Markdown sections instead"
        )
        return
    if not isinstance(data, dict):
        info.errors.append(f"README line {line}: the ```kernelscope block must be a JSON object")
        return
    try:
        if "target" in data:
            info.target = TargetInfo.model_validate(data["target"])
        if "stop_conditions" in data:
            info.stop_conditions = [
                _block_condition(item, line) for item in _as_list(data["stop_conditions"])
            ]
            info.unchecked_stop_conditions = []  # (the block's, all read, replace the prose's)
        if "correctness_threshold" in data:
            threshold = data["correctness_threshold"]
            if isinstance(threshold, (int, float)):
                threshold = {"value": threshold}
            info.correctness_threshold = CorrectnessThreshold.model_validate({"line": line, **threshold})
        if "bench" in data:
            if not isinstance(data["bench"], dict):
                raise ValueError("bench must be an object")
            info.bench = data["bench"]
        if "hardware_specs" in data:
            info.hardware_specs = [
                HardwareSpec.model_validate({"line": line, **item})
                for item in _as_list(data["hardware_specs"])
            ]
    except (ValidationError, ValueError, TypeError) as exc:
        info.errors.append(f"README line {line}: invalid ```kernelscope block: {exc}")
        return
    info.machine_block = True


def _as_list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {type(value).__name__}")
    return value


def _block_condition(item: Any, line: int) -> StopCondition:
    """A stop condition from the block: a string like the prose, or an object."""
    if isinstance(item, str):
        return _checkable(item, read_condition(item, line), "")
    if not isinstance(item, dict):
        raise ValueError(f"stop condition must be a string or object, got {item!r}")
    text = f"{item.get('metric', '')} {item.get('op', item.get('comparator', '>='))} " + (
        f"{item.get('value')}{item.get('unit', '')}"
    )
    condition = _checkable(item, read_condition(text, line), ": need op, value and unit")
    if item.get("dtype"):
        condition.dtype = str(item["dtype"])
    if item.get("label"):
        condition.label = str(item["label"])
    return condition


def _checkable(item: Any, condition: StopCondition | str | None, need: str) -> StopCondition:
    if isinstance(condition, StopCondition):
        return condition
    why = f": {condition}; {readme_conditions.EXPECTED}" if condition else need
    raise ValueError(f"cannot read stop condition {item!r}{why}")
