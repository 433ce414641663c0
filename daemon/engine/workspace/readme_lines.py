"""The lines of a README as readme.py reads them, without pydantic: its sections, bullets,
stop-condition texts and their metric kind, and the ```kernelscope block's place.

readme.py builds the `ReadmeInfo` model on these; the CLI's fast path (cli/fast.py: `memory
list`, run many times per iteration by agents) asks `primary_kind` for the README's primary
metric, which decides a version's score vs v0 (memory/core.py), by the same code.
"""

from __future__ import annotations

import math
import re

TYPE_CHECKING = False  # typing is 2-3 ms of the CLI fast path's start-up: annotations only
if TYPE_CHECKING:
    from kernelscope.protocol.workspace import MetricKind

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
# a template's `<value>`, `<metric name>`: the bracket hugs a word, so a comparator (`< 40 us`,
# `<= 40`, `n > 1M`, `n<1M`) never opens or closes one
PLACEHOLDER = re.compile(r"<(?![=\s\d-])[^<>\n]*[A-Za-z][^<>\n]*(?<![\s=-])>")
NUMBER = r"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+)"
COMPARATOR = r"(>=|<=|≥|≤|=>|=<|>|<)"
_UNIT = r"(TB/s|GB/s|MB/s|TFLOP/s|TFLOPS|TFLOPs|TOPS|T|ms|us|µs|μs|ns)"
CONDITION = re.compile(COMPARATOR + r"\s*" + NUMBER + r"\s*" + _UNIT + r"(?![A-Za-z/])")
MACHINE_FENCE = re.compile(r"^\s*(```|~~~)\s*kernelscope\s*$")
# A comparison `CONDITION` could not read: a comparator (not an arrow's `->` or `<-`) and what
# follows it, which `unusable` says what is wrong with.
_COMPARISON = re.compile(r"(?<![-<>=])(?:>=|<=|≥|≤|=>|=<|>|<(?!-))\s*(?P<rest>.*)$")
_NEGATIVE = re.compile(r"^[-−]\s*" + NUMBER)
_NAN = re.compile(r"^[-+]?nan(?!o)", re.I)
_INFINITE = re.compile(r"^[-+]?(?:inf(?:inity)?|∞)", re.I)
_DECIMAL_COMMA = re.compile(r"^(\d+(?:,\d+)+(?:\.\d+)?)")
_NUMBER_THEN = re.compile(r"^" + NUMBER + r"\s*(?P<unit>[^\s\d(),;:]*)")
# A comparison is a target kernelscope measures only when the bullet names one of its metrics
# (by name, or by a unit after a number); a correctness threshold (atol, rtol, abs_err, rel_err:
# read apart), an iteration cap, a `2x` speedup or a `90%` utilization compares something else.
_MEASURED = re.compile(
    r"\b(?:bandwidth|throughput|latency|runtime|t?flop|tops\b)|(?:[TGM]B|TFLOP)/s|TFLOPS"
    r"|\d\s*(?:ms|us|µs|μs|ns)(?![A-Za-z])",
    re.I,
)
_THRESHOLD = re.compile(r"\b(?:atol|rtol|toleran\w*|\w*err(?:or)?)\b", re.I)
_RATIO = re.compile(r"^" + NUMBER + r"\s*(?:%|x\b|×)", re.I)
EXPECTED = (
    "expected a positive number and a unit: bandwidth in TB/s, GB/s or MB/s, TFLOP/s in "
    "TFLOPS or T, latency in ms, us or ns (e.g. 'bandwidth >= 3.87TB/s')"
)

# A unit `CONDITION` matches (lower-cased) -> the metric it measures and its scale to the
# canonical unit (GB/s, TFLOP/s, us).
UNIT_KIND_SCALE: dict[str, tuple[MetricKind, float]] = {
    "tb/s": ("bandwidth", 1000.0),
    "gb/s": ("bandwidth", 1.0),
    "mb/s": ("bandwidth", 0.001),
    "tflop/s": ("tflops", 1.0),
    "tflops": ("tflops", 1.0),
    "tops": ("tflops", 1.0),
    "t": ("tflops", 1.0),
    "ms": ("latency", 1000.0),
    "us": ("latency", 1.0),
    "µs": ("latency", 1.0),
    "μs": ("latency", 1.0),
    "ns": ("latency", 0.001),
}
# What `primary_kind` answers for a README with a ```kernelscope block: only the model
# (readme.py) can say whether the block's stop conditions stand.
BLOCK_DECIDES = "block-decides"


class Section:
    __slots__ = ("key", "lines", "start", "title")

    def __init__(self, title: str, start: int) -> None:
        self.title = title
        self.key = title.strip().lower()
        self.start = start  # 0-based index of the first body line
        self.lines: list[str] = []


def split_sections(lines: list[str]) -> list[Section]:
    sections = [Section("", 0)]
    in_fence = False
    for index, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        match = None if in_fence else HEADING.match(line)
        if match:
            sections.append(Section(match.group(2), index + 1))
        else:
            sections[-1].lines.append(line)
    return sections


def sections_named(sections: list[Section], *needles: str) -> list[Section]:
    return [s for s in sections if any(needle in s.key for needle in needles)]


def bullets(section: Section) -> list[tuple[int, str]]:
    """(1-based line, text) of each bullet, with continuation lines folded in."""
    found: list[tuple[int, str]] = []
    in_fence = False
    for offset, line in enumerate(section.lines):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        match = BULLET.match(line)
        if match:
            found.append((section.start + offset + 1, match.group(1).strip()))
        elif found and line.startswith(("  ", "\t")) and line.strip():
            line_no, text = found[-1]
            found[-1] = (line_no, f"{text} {line.strip()}")
    return found


def stop_condition_bullets(sections: list[Section]) -> list[tuple[int, str, bool]]:
    """(line, text, is a template placeholder) of each `## Stop Conditions` bullet."""
    return [
        (line_no, bullet, PLACEHOLDER.search(bullet) is not None)
        for section in sections_named(sections, "stop condition")
        for line_no, bullet in bullets(section)
    ]


def find_machine_block(lines: list[str]) -> tuple[str, int] | None:
    for index, line in enumerate(lines):
        match = MACHINE_FENCE.match(line)
        if not match:
            continue
        fence = match.group(1)
        body: list[str] = []
        for inner in lines[index + 1 :]:
            if inner.strip().startswith(fence):
                return "\n".join(body), index + 1
            body.append(inner)
        return "\n".join(body), index + 1  # unterminated: parse what is there
    return None


def read_condition(text: str) -> tuple[re.Match[str], float] | str | None:
    """The stop condition a bullet states: (its `CONDITION` match, its value) when kernelscope
    can check it; why not (a reason) when it compares something kernelscope cannot check (a
    negative, non-finite or zero target, a unit or number it does not read, no value); None when
    it compares no number, or none on a metric kernelscope measures (`_MEASURED`: an iteration
    cap, a speedup, a utilization, a correctness threshold are stop conditions stated in words)."""
    match = CONDITION.search(text)
    if match:
        value = float(match.group(2))
        if not math.isfinite(value):
            return f"{match.group(2)} is not finite (too large for a number)"
        if value <= 0:
            return f"{match.group(2)}{match.group(3)} is not positive: no measurement can be compared with it"
        return match, value
    comparison = _COMPARISON.search(text)
    if comparison is None or _THRESHOLD.search(text) or not _MEASURED.search(text):
        return None
    rest = comparison.group("rest").strip()
    if _RATIO.match(rest) and not _MEASURED.search(rest):
        return None  # `bandwidth utilization >= 90% of peak`: not a figure kernelscope measures
    return unusable(rest)


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
    comma = _DECIMAL_COMMA.match(rest)
    if comma:
        return _comma_reason(comma.group(1))
    number = _NUMBER_THEN.match(rest)
    if number is None:
        return None
    unit = number.group("unit")
    return f"unit {unit!r} is not one kernelscope reads" if unit else f"{number.group(1)} has no unit"


def primary_kind(text: str) -> str | None:
    """The metric of the README's first stop condition (`ReadmeInfo.primary_kind`), None when
    it states none, BLOCK_DECIDES when a ```kernelscope block may state them instead."""
    lines = text.splitlines()
    if find_machine_block(lines) is not None:
        return BLOCK_DECIDES
    for _, bullet, placeholder in stop_condition_bullets(split_sections(lines)):
        read = None if placeholder else read_condition(bullet)
        if isinstance(read, tuple):
            return UNIT_KIND_SCALE[read[0].group(3).lower()][0]
    return None


def _comma_reason(number: str) -> str:
    """Why a number with commas is not read, and how to write it: commas that can only group
    thousands (`3,350.5`, `1,000,000`), one that may group them or mark decimals (`3,350`: both
    readings given, neither guessed), a decimal comma (`4,32`), or neither (`1,2,3`)."""
    plain = number.replace(",", "")
    if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", number):
        if "." in number or number.count(",") > 1:
            return f"{number} has commas grouping thousands (write {plain})"
        decimal = number.replace(",", ".")
        return f"{number} has a comma that may group thousands or mark decimals (write {plain} or {decimal})"
    if number.count(",") == 1 and "." not in number:
        return f"{number} has a decimal comma (write {number.replace(',', '.')})"
    return f"{number} is no number kernelscope reads (write it with a decimal point and no commas)"
