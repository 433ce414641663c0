"""The lines of a README as readme.py reads them, without pydantic: its sections, bullets,
stop-condition bullets, the ```kernelscope block's place, and the words a target is written in
(numbers, comparators, units and the metric each unit measures).

readme.py builds the `ReadmeInfo` model on these, and readme_conditions.py reads what a
stop-condition bullet states on them (for readme.py and the CLI's fast path alike).
"""

from __future__ import annotations

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
UNIT = r"(TB/s|GB/s|MB/s|TFLOP/s|TFLOPS|TFLOPs|TOPS|T|ms|us|µs|μs|ns)"
CONDITION = re.compile(COMPARATOR + r"\s*" + NUMBER + r"\s*" + UNIT + r"(?![A-Za-z/])")
MACHINE_FENCE = re.compile(r"^\s*(```|~~~)\s*kernelscope\s*$")
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
    "%": ("utilization", 1.0),  # (readme_conditions.py reads a utilization target: no `CONDITION`)
}
# Sections that state targets: the seed's `## Target` / `## Task Context`, and today's atrex
# READMEs' `## Config` (SOL-ExecBench seeds) and `## Campaign` (Atrex-Bench seeds).
TARGET_SECTIONS = ("target", "context", "config", "campaign")


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
    """(line, text, is a template placeholder) of each stop-condition bullet: every bullet of a
    `## Stop Conditions` section, and a `... stop condition: ...` bullet of a section that
    states targets (Atrex-Bench's `## Campaign` has `Target utilization stop condition: 90%`)."""
    found: list[tuple[int, str, bool]] = []
    for section in sections:
        in_stop = "stop condition" in section.key
        if not (in_stop or any(needle in section.key for needle in TARGET_SECTIONS)):
            continue
        for line_no, bullet in bullets(section):
            if in_stop or "stop condition" in bullet.lower():
                found.append((line_no, bullet, PLACEHOLDER.search(bullet) is not None))
    return found


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
