"""What a stop-condition bullet states as a target, without pydantic: the comparator, the
value and unit (through the arithmetic an agent may have written, readme_arith.py), and why
not where it compares a number kernelscope cannot check.

readme.py builds `StopCondition`s on these; the CLI's fast path (cli/fast.py: `memory list`,
run many times per iteration by agents) asks `primary_kind` for the README's primary metric,
which decides a version's score vs v0 (memory/core.py), by the same code.
"""

from __future__ import annotations

import math
import re

from kernelscope.daemon.engine.workspace.readme_arith import (
    GROUPED_DIGITS,
    Reading,
    grouping_reason,
    read_arithmetic,
    readable,
)
from kernelscope.daemon.engine.workspace.readme_lines import (
    COMPARATOR,
    CONDITION,
    NUMBER,
    UNIT_KIND_SCALE,
    find_machine_block,
    split_sections,
    stop_condition_bullets,
)

# A comparison `CONDITION` could not read: a comparator (not an arrow's `->` or `<-`) and what
# follows it, which `unusable` (or readme_arith.py) says what is wrong with.
_COMPARISON = re.compile(r"(?<![-<>=])(?P<comparator>>=|<=|≥|≤|=>|=<|>|<(?!-))\s*(?P<rest>.*)$")
_NEGATIVE = re.compile(r"^[-−]\s*" + NUMBER)
_NAN = re.compile(r"^[-+]?nan(?!o)", re.I)
_INFINITE = re.compile(r"^[-+]?(?:inf(?:inity)?|∞)", re.I)
_DECIMAL_COMMA = re.compile(r"^(\d+(?:,\d+)+(?:\.\d+)?)")
_NUMBER_THEN = re.compile(r"^" + NUMBER + r"\s*(?P<unit>[^\s\d(),;:]*)")
# A comparison is a target kernelscope measures only when the bullet names one of its metrics
# (by name, or by a unit after a number) or a utilization (`_UTILIZATION`); a correctness
# threshold (atol, rtol, abs_err, rel_err: read apart), an iteration cap or a `2x` speedup
# compares something else.
_MEASURED = re.compile(
    r"\b(?:bandwidth|throughput|latency|runtime|t?flop|tops\b)|(?:[TGM]B|TFLOP)/s|TFLOPS"
    r"|\d\s*(?:ms|us|µs|μs|ns)(?![A-Za-z])",
    re.I,
)
_THRESHOLD = re.compile(r"\b(?:atol|rtol|toleran\w*|\w*err(?:or)?)\b", re.I)
_BRACKETS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
# a comparator other than an arrow's (`=>`, `->`, `<-`)
_OTHER_COMPARISON = re.compile(r"(?<![-<>=])(?:>=|<=|≥|≤|=<|>|<(?!-))")
# what the bullet's agent says a metric stands at, not a target (`; currently > 25 us`)
_STATUS = re.compile(r"\b(?:currently|now|today|was|measured|baseline|v0|got|at present)\b", re.I)
_CLAUSE = re.compile(r",|;|\band\b|\bor\b|&+|\|", re.I)
_RATIO = re.compile(r"^" + NUMBER + r"\s*(?:%|x\b|×)", re.I)
# A utilization of the peak, `peak utilization >= 90%`, or as atrex's Atrex-Bench README states
# its `--target-util` (orchestrator/campaign.py L909: `Target utilization stop condition: `90%``,
# reached at or above it). One that names a metric (`bandwidth utilization >= 90%`) is of that
# metric alone, which no record field kernelscope judges states: words; so is any other
# utilization (`SM utilization >= 80%`, `GPU utilization >= 95% (nvidia-smi)`). Any other word
# before it is prose (`Stop when utilization`, `the peak utilization`, `kernel utilization`):
# the peak's, as atrex reads it, unless the word right before `utilization` (past `target`)
# names another one (`_OTHER_UTILIZATION`); `peak` right before makes it the peak's
# (`HBM peak utilization`).
_WORD_BEFORE = re.compile(r"([A-Za-z0-9]+)(?:['’]s)?[^A-Za-z0-9]*$")
_OTHER_UTILIZATION = frozenset({
    "sm", "sms", "core", "cores", "tensor", "occupancy", "memory", "mem", "gpu", "gpus",
    "bandwidth", "bw", "compute", "dram", "hbm", "l1", "l2", "cache", "smem", "shared",
    "register", "warp", "thread", "pipe", "pipeline", "alu", "fma", "cpu", "power", "link",
    "nvlink", "pcie", "issue",
})  # fmt: skip
_UTILIZATION = re.compile(r"\butili[sz]ation\b[^<>=≥≤]*?" + COMPARATOR + r"\s*" + NUMBER + r"\s*%", re.I)
# arithmetic on a utilization's figure (`90% * 0.9`, `90% - 5%`): a reason, never the 90%
_ON_UTILIZATION = re.compile(r"\s*(?:[*×·⋅∗✕•/+]|x\b|[-−](?=\s*[\d.]))\s*[\d.]")
_STATED_UTILIZATION = re.compile(r"\butili[sz]ation\s+stop\s+condition\W*:\W*" + NUMBER + r"\s*%", re.I)
EXPECTED = (
    "expected a positive number and a unit: bandwidth in TB/s, GB/s or MB/s, TFLOP/s in "
    "TFLOPS or T, latency in ms, us or ns (e.g. 'bandwidth >= 3.87TB/s')"
)


# What `primary_kind` answers for a README with a ```kernelscope block: only the model
# (readme.py) can say whether the block's stop conditions stand.
BLOCK_DECIDES = "block-decides"


class Target:
    """The target a bullet states: its comparator as written, its value in `unit` (as written),
    where its comparison starts in the bullet (`start`: what comes before names the metric), and
    `written`, the comparison as the lens names it: the README's own (`>= 4.32TB/s`) or, where
    it wrote arithmetic, what that comes to (`4.8TB/s * 90%`: `>= 4.32TB/s`); `figure` is its
    value and unit so written (`4.32TB/s`)."""

    __slots__ = ("comparator", "figure", "start", "unit", "value", "written")

    def __init__(
        self, comparator: str, value: float, unit: str, start: int, figure: str, written: str
    ) -> None:
        self.comparator = comparator
        self.value = value
        self.unit = unit
        self.start = start
        self.figure = figure
        self.written = written


def read_condition(text: str) -> Target | str | None:
    """The stop condition a bullet states when kernelscope can check it; why not (a reason)
    when it compares something kernelscope cannot check (a negative, non-finite or zero target,
    a unit or number it does not read, arithmetic it does not compute, no value); None when it
    compares no number, or none on a metric kernelscope measures (`_MEASURED`: an iteration
    cap, a speedup, a correctness threshold are stop conditions stated in words)."""
    text = readable(text)  # (`>= `4.32TB/s``, `>= ~4.32TB/s`: positions kept for the caller)
    utilization = _utilization(text)
    if utilization is not None:
        return utilization
    match = CONDITION.search(text)
    if match:
        comparator, start = match.group(1), match.start()
        figure = f"{match.group(2)}{match.group(3)}"
        written = " ".join(match.group(0).split())
        plain = Target(comparator, float(match.group(2)), match.group(3), start, figure, written)
        return _measurable(_reading(comparator, start, text[match.end(1) :]) or plain)
    comparison = _COMPARISON.search(text)
    if comparison is None or _THRESHOLD.search(text) or not _names_a_metric(text, comparison.group("rest")):
        return None
    rest = comparison.group("rest").strip()
    if _RATIO.match(rest) and not _MEASURED.search(rest):
        return None  # `bandwidth utilization >= 90% of peak`: not a figure kernelscope measures
    target = _reading(comparison.group("comparator"), comparison.start(), rest)
    return unusable(rest) if target is None else _measurable(target)


def _utilization(text: str) -> Target | str | None:
    """The utilization target a bullet states (`_UTILIZATION`), or why it cannot be checked; None
    where it states none. atrex's `0%` turns its check off (long_horizon/campaign.py: only a
    `target_util > 0` stops): no target, as the bullet says in words."""
    if _MEASURED.search(_BRACKETS.sub(" ", text)):  # (`(of 4.8 TB/s peak)`: a note)
        return None
    stated = _STATED_UTILIZATION.search(text)
    if stated is not None and _of_the_peak(text, stated.start()):
        value = float(stated.group(1))
        if _ON_UTILIZATION.match(text, stated.end()):
            return _arithmetic_reason(text, stated.start(1))
        if value == 0:
            return None
        figure = f"{stated.group(1)}%"
        return Target(">=", value, "%", stated.start(), figure, f">= {figure}")
    match = _UTILIZATION.search(text)
    if match is None or not _of_the_peak(text, match.start()):
        return None
    comparator, number = match.group(1), match.group(2)
    start = match.start(1)
    if _ON_UTILIZATION.match(text, match.end()):
        return _arithmetic_reason(text, match.start(2))
    target = Target(comparator, float(number), "%", start, f"{number}%", f"{comparator} {number}%")
    return _measurable(target)


def _arithmetic_reason(text: str, start: int) -> str:
    """Why a utilization with arithmetic on its figure (from `start`: `90% * 0.9`) is no
    target: one wording for the comparison and atrex's stated form alike."""
    written = " ".join(text[start:].split())
    return f"cannot compute {written!r}: write the utilization it comes to (`peak utilization >= 81%`)"


def _of_the_peak(text: str, start: int) -> bool:
    """Whether the utilization named at `start` is the peak's (`peak utilization`, `target
    utilization`, `Stop when utilization`), not another's (`SM utilization`, `SM target
    utilization`): the word before it, past `target`, is not in `_OTHER_UTILIZATION`."""
    before = text[:start]
    while (word := _WORD_BEFORE.search(before)) is not None and word.group(1).lower() == "target":
        before = before[: word.start()]
    return word is None or word.group(1).lower() not in _OTHER_UTILIZATION


def further_comparison(text: str) -> str | None:
    """A comparison in the bullet, outside brackets, other than the one read, that states a
    measured target of its own (`latency <= 20 us and bandwidth >= 4.8TB/s * 0.9`: `bandwidth
    >= 4.8TB/s * 0.9`; a `peak utilization >= 90%`): one bullet is one condition, so readme.py
    says this one is not read.
    None when there is none: a speedup, a tolerance or a shape compared beside the target
    (`speedup >= 2x and latency <= 20 us`), a status (`; currently > 25 us`), an arrow (`=>`)."""
    read = read_condition(text)
    if not isinstance(read, Target):
        return None
    flat = _BRACKETS.sub(lambda bracket: " " * len(bracket.group(0)), readable(text))
    for other in _OTHER_COMPARISON.finditer(flat):
        if other.start() == read.start:
            continue
        clause_start = max((c.end() for c in _CLAUSE.finditer(flat, 0, other.start())), default=0)
        clause_end = next((c.start() for c in _CLAUSE.finditer(flat, other.end())), len(flat))
        clause = text[clause_start:clause_end]
        if _STATUS.search(clause[: other.start() - clause_start]):
            continue
        target = read_condition(text[other.start() : clause_end])
        utilization = _utilization(readable(clause))  # (its words stand before the comparator)
        if (isinstance(target, Target) and target.start == 0) or (
            isinstance(utilization, Target) and utilization.start == other.start() - clause_start
        ):
            return " ".join(clause.replace("`", "").split())
    return None


def _names_a_metric(text: str, rest: str) -> bool:
    """Whether the bullet compares a metric kernelscope measures: by name or unit, or by a
    figure with a unit in arithmetic after the comparator (`bf16 >= 0.9x989.4T`)."""
    return bool(_MEASURED.search(text)) or isinstance(read_arithmetic(rest), Reading)


def _reading(comparator: str, start: int, rest: str) -> Target | str | None:
    """The target arithmetic after a comparator comes to (readme_arith.py), or why not; None
    when `rest` is no arithmetic."""
    reading = read_arithmetic(rest)
    if not isinstance(reading, Reading):
        return reading
    written = f"{comparator} {reading.written}"
    return Target(comparator, reading.value, reading.unit, start, reading.written, written)


def _measurable(target: Target | str) -> Target | str:
    """`target` where a measurement can be compared with its value, else why not."""
    if isinstance(target, str):
        return target
    if not math.isfinite(target.value):
        return f"{target.figure} is not finite (too large for a number)"
    if target.value <= 0:
        return f"{target.figure} is not positive: no measurement can be compared with it"
    return target


def unusable(rest: str) -> str | None:
    """Why the value after a comparator (`rest`) is no target kernelscope reads; None when it is
    words, not a number (`latency < the baseline's`)."""
    if not rest.strip(" .,;*`"):
        return "no value after the comparator"
    if _NEGATIVE.match(rest):
        return f"{rest.split()[0]} is negative"
    if _NAN.match(rest):
        return f"{rest.split()[0]} is not a number"
    if _INFINITE.match(rest):
        return f"{rest.split()[0]} is not finite"
    grouped = _DECIMAL_COMMA.match(rest) or GROUPED_DIGITS.match(rest)
    if grouped:
        return grouping_reason(grouped.group(1))
    number = _NUMBER_THEN.match(rest)
    if number is None:
        return None
    unit = number.group("unit")
    return f"unit {unit!r} is not one kernelscope reads" if unit else f"{number.group(1)} has no unit"


def primary_kind(text: str) -> str | None:
    """The metric of the README's first stop condition on a measured figure, not a utilization
    (`ReadmeInfo.primary_kind`), None when it states none, BLOCK_DECIDES when a ```kernelscope
    block may state them instead."""
    lines = text.splitlines()
    if find_machine_block(lines) is not None:
        return BLOCK_DECIDES
    for _, bullet, placeholder in stop_condition_bullets(split_sections(lines)):
        read = None if placeholder else read_condition(bullet)
        kind = UNIT_KIND_SCALE[read.unit.lower()][0] if isinstance(read, Target) else None
        if kind is not None and kind != "utilization":  # (no figure a version is measured by)
            return kind
    return None
