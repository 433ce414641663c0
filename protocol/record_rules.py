"""The rules of a memory record that need no model: version names, loose numbers, the masked
flag, the quality gate, and which raw records the model certainly accepts.

Pydantic-free on purpose: the CLI's fast path (`kernelscope memory list|read|latest|update`,
run many times per iteration by agents) reads raw records with these; protocol/memory.py's
models use the same functions, so each rule is written once.
"""

from __future__ import annotations

import math
import re

TYPE_CHECKING = False  # typing is 2-3 ms of the CLI fast path's start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

VERSION_RE = re.compile(r"^v(\d+)$")
# The memory record's performance field that holds each target metric.
RECORD_METRIC: dict[str, str] = {"bandwidth": "bandwidth_gbps", "tflops": "tflops", "latency": "latency_us"}
# The fields whose larger is a version's utilization of the hardware's peak, as atrex's
# supervisor reads them (orchestrator/workspace_state.py `peak_util`).
UTILIZATION_FIELDS = ("tflops_peak_utilization_pct", "bandwidth_peak_utilization_pct")
_LEADING_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")
# The types a loosely typed scalar may have (protocol.memory.Scalar).
SCALAR_TYPES = (type(None), bool, int, float, str)


def as_float(value: Any) -> float | None:
    """A finite float from a loosely typed number (`12`, `12.5`, `"12.5"`, `"12.5 us"`)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, (int, float)):
            number = float(value)
        elif isinstance(value, str):
            match = _LEADING_NUMBER.match(value)
            if not match:
                return None
            number = float(match.group(1))
        else:
            return None
    except OverflowError:  # an integer of hundreds of digits: no float holds it
        return None
    return number if math.isfinite(number) else None


def record_figure(record: Any, kind: str) -> float | None:
    """The figure a memory record (raw dict or model) states for a stop condition's `kind`: its
    `performance` field (RECORD_METRIC), or for `utilization` the larger of the two peak
    percentages it states (atrex's `peak_util`; one alone is that one); None where it states none."""
    performance = section_get(record, "performance")
    if kind != "utilization":
        return as_float(section_get(performance, RECORD_METRIC[kind]))
    figures = [as_float(section_get(performance, name)) for name in UTILIZATION_FIELDS]
    stated = [figure for figure in figures if figure is not None]
    return max(stated) if stated else None


def figure_fields(kind: str) -> str:
    """The record fields `record_figure` reads for `kind`, as a note names them."""
    if kind != "utilization":
        return f"performance.{RECORD_METRIC[kind]}"
    return f"performance.{UTILIZATION_FIELDS[0]} or {UTILIZATION_FIELDS[1]}"


def ratio(numerator: float, denominator: float) -> float | None:
    """`numerator / denominator` as a score or ratio of two recorded numbers: a finite positive
    number, or None. v0's latency over a tiny one (1e-320) overflows to inf, which no surface
    may show (`best infx`) and JSON cannot carry; a score is a finite number or none."""
    try:
        value = numerator / denominator
    except (ZeroDivisionError, OverflowError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def parse_version(version: str) -> int:
    """`"v12"` -> 12. Raises ValueError for anything else (so v10 sorts after v9)."""
    match = VERSION_RE.match(version.strip()) if isinstance(version, str) else None
    if not match:
        raise ValueError(f"invalid version {version!r}: expected 'v<N>' such as v0, v7, v12")
    return int(match.group(1))


def canonical_version(version: str) -> str:
    """`v3`, `V3` or `3` -> `v3`, as a person or an agent may type it; ValueError for anything
    else. One spelling per version: masking and the lens join experiments to a version by it."""
    text = str(version).strip()
    if text.isdigit():
        text = "v" + text
    return format_version(parse_version(text[:1].lower() + text[1:]))


def format_version(number: int) -> str:
    """12 -> `"v12"`."""
    if number < 0:
        raise ValueError(f"version number must be >= 0, got {number}")
    return f"v{number}"


def section_get(section: Any, key: str) -> Any:
    """A key of a record's section: a dict's entry, a model's field or kept unknown key, else
    None. A key a pydantic model lacks is answered from its class, not by `getattr`: pydantic
    raises and formats an AttributeError for each one, and a memory scan asks thousands of
    keys most records do not have (long_horizon, carried_from_version...)."""
    if section is None:
        return None
    if isinstance(section, dict):
        return section.get(key)
    if isinstance(section, (str, int, float, bool, list)):
        return None
    fields = getattr(type(section), "__pydantic_fields__", None)
    if fields is not None and key not in fields and not key.startswith("_"):
        extra = section.__pydantic_extra__
        if extra and key in extra:
            return extra[key]
        if not hasattr(type(section), key):  # no property or method of that name either
            return None
    return getattr(section, key, None)


def masked(value: Any) -> bool:
    """`masked: true` (or the string "true", as some tools write it)."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True


def gate_result(quality_gate: Any, correctness: Any) -> str | None:
    """`quality_gate.result` upper-cased, else `correctness.status`, else None."""
    for section, key in ((quality_gate, "result"), (correctness, "status")):
        value = section_get(section, key)
        if isinstance(value, str) and value.strip():
            return value.strip().upper()
    return None


def certainly_valid(data: dict[str, Any]) -> bool:
    """Whether the record model certainly accepts this raw record: everything in a record is
    optional and open but `version` (a string 'v<N>') and the top-level scalars `timestamp`
    and `git_commit_hash`. False means: ask the model (its message words the verdict)."""
    version = data.get("version")
    if type(version) is not str or not VERSION_RE.match(version.strip()):
        return False
    return all(type(data.get(key)) in SCALAR_TYPES for key in ("timestamp", "git_commit_hash"))


EXCESSIVE_SPEEDUP = 10.0  # KernelBench's eval.py `excessive_speedup_threshold`
REFERENCE_NAMES = ("reference", "the reference")


def check_before_trusting(speedup: float | None) -> str | None:
    """Why a speedup over the reference needs checking before it is trusted: KernelBench flags
    any above 10x as suspicious (a cheat, a reference that does needless work, a timing
    fault) and so does kernelscope, on the result, the lenses and hover."""
    if speedup is None or speedup <= EXCESSIVE_SPEEDUP:
        return None
    return (
        f"check before trusting: {speedup:.2f}x over the reference is above {EXCESSIVE_SPEEDUP:g}x, "
        "which KernelBench flags as suspicious (a shortcut, a reference doing needless work, or a "
        "timing fault)"
    )


# A score's name where it is not an in-run speedup (format_score writes it before the value).
SCORE_KIND_WORDS = {"latency_ratio": "latency ratio", "metric_ratio": "metric ratio"}


def format_score(
    value: float,
    kind: str = "speedup",
    ci: tuple[float, float] | None = None,
    versus: str | None = None,
    aggregate: str | None = None,
) -> str:
    """The one way a score is written, on every surface (tables, lenses, hover, hints,
    diagnostics, JSON-free text): two decimals and an `x`, named when it is not an in-run
    speedup (`latency ratio 1.16x`), the version it is against when the place does not say it,
    its 95% interval when measured: `17.13x vs v0 [13.61-23.33]`; a speedup over the
    reference above 10x says to check it before trusting it. `aggregate` names how a speedup
    over the reference combines the shapes (atrex records one of two, atrex_fields.py):
    `3.81x vs reference (mean over shapes)`, `3.48x vs reference (geomean)`."""
    prefix = f"{SCORE_KIND_WORDS[kind]} " if kind in SCORE_KIND_WORDS else ""
    against = (f" vs {versus}" if versus else "") + (f" ({aggregate})" if aggregate else "")
    interval = f" [{ci[0]:.2f}-{ci[1]:.2f}]" if ci else ""
    flag = " (check before trusting)" if versus in REFERENCE_NAMES and check_before_trusting(value) else ""
    return f"{prefix}{value:.2f}x{against}{interval}{flag}"
