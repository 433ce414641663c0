"""The memory records as files: which files are records, reading one as the raw JSON object it
is, a dotted field of it, and the one summary row `memory list` shows of it.

Pydantic-free on purpose (the rules come from protocol/record_rules.py): the memory manager
(records.py) builds its validated records on top of these, and the CLI's fast path
(cli/fast.py: `memory list|read|latest|update`, run many times per iteration by agents) calls
them directly, so both read a workspace by the same code. A record these functions cannot
vouch for (`RawFile.vouched` false: a version that is not a 'v<N>' string, say) is left to the
model, whose message words the verdict.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path

from kernelscope.daemon.engine import DataError, UsageError, load_json
from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.memory.record_edits import get_path
from kernelscope.protocol import workspace_files
from kernelscope.protocol.record_rules import (
    RECORD_METRIC,
    as_float,
    canonical_version,
    certainly_valid,
    format_version,
    gate_result,
    masked,
    parse_version,
    ratio,
    section_get,
)

TYPE_CHECKING = False  # typing is 2-3 ms of the CLI fast path's start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

MEMORY_DIR = "memory"
BASELINE = "v0"
FILE_RE = re.compile(r"^v(\d+)\.json$")
# A mask-half cut short leaves this journal in memory/: the writer's lock replays it first;
# readers show it applied, writing nothing (records.MemoryManager.scan).
JOURNAL_NAME = ".kernelscope-journal.json"
# Masking the baseline, by `memory mask` or by `memory update --set masked=true`.
MASK_BASELINE_REFUSAL = (
    "refusing to mask v0, the baseline (the restart workflow forbids it); "
    "pass --include-baseline if you really mean it"
)
# Files any of which may show that a supervisor drives the workspace (workspace/atrex.py says
# for certain; the CLI fast path hands such a workspace to the full CLI, which asks it).
SUPERVISOR_HINTS = (
    ".atrex_long_horizon",
    ".orchestrator_state.json",
    ".orchestrator_mode.json",
    "memory/live.json",
)


def no_versions(memory_dir: Path) -> str:
    """What `memory list` and `memory summary` print (exit 0) for a memory/ that holds no record
    yet: a fresh workspace (an atrex one starts so) has no versions, which is an answer, as
    `[]` is under `--json`, not a missing-data error."""
    return f"no versions recorded yet in {memory_dir}"


def nothing_to_read(memory_dir: Path, masked: int) -> str:
    """Why `memory read` (every version, the fast path's and the full one's) has nothing to
    return (exit 2): no record yet (`no_versions`), or every readable one masked (`masked` of
    them), which `--include-masked` reads; "no memory files" was untrue there."""
    if not masked:
        return no_versions(memory_dir)
    which = "the one version" if masked == 1 else f"all {masked} versions"
    verb, them = ("is", "it") if masked == 1 else ("are", "them")
    return f"{which} in {memory_dir} {verb} masked: --include-masked reads {them} (or unmask)"


def normalize_version(version: str) -> str:
    """Accept `v3`, `V3` or `3`; return `v3`. Anything else is a usage error."""
    try:
        return canonical_version(version)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def is_baseline(version: str) -> bool:
    """Whether `version` names v0 (False for a malformed one: reading it words that error)."""
    try:
        return normalize_version(version) == BASELINE
    except (DataError, UsageError):
        return False


def mismatch(path: Path, said: str, number: int) -> str:
    return f"{path.name}: file says version {said!r}, its name says {format_version(number)}"


class RawFile:
    """A memory file read without the record model: its number, path, JSON object (None when
    unreadable), why it is unusable (None when it is fine) and its text. (A plain class: a
    dataclass or a named tuple would add 1-4 ms to the start-up of the CLI's fast path.)"""

    __slots__ = ("error", "error_line", "number", "path", "raw", "text", "vouched")

    def __init__(
        self,
        number: int,
        path: Path,
        raw: dict[str, Any] | None,
        error: str | None,
        text: str = "",
        vouched: bool = True,  # False: only the record model can judge it
        error_line: int | None = None,  # the 1-based line the error is on (None: the file as a whole)
    ) -> None:
        self.number, self.path, self.raw, self.error = number, path, raw, error
        self.text, self.vouched, self.error_line = text, vouched, error_line

    @property
    def version(self) -> str:
        return format_version(self.number)

    @property
    def masked(self) -> bool:
        return self.raw is not None and self.error is None and masked(self.raw.get("masked"))


def with_version(raw: dict[str, Any], number: int) -> dict[str, Any]:
    """The record as the model judges it: one without a `version` key has its file's (every
    reader and writer takes it so; the file keeps no key it was not given)."""
    return raw if "version" in raw else {"version": format_version(number), **raw}


def not_a_file(path: Path) -> str | None:
    """What stands at `path` when it is neither a regular file nor a link to one, in words ("a
    folder", "a link to a missing file (TARGET)"); None for a regular file, a link to one, or
    nothing at all. Such a `v<N>.json` is listed as unreadable with these words, counts for the
    next version (it holds that name), and every write refuses it (`refuse_if_in_the_way`, which
    refuses a link to a file too): kernelscope neither writes into nor removes what it cannot
    read as a record."""
    try:
        mode = path.stat().st_mode  # (follows a link)
    except FileNotFoundError:
        return f"a link to a missing file ({os.readlink(path)})" if path.is_symlink() else None
    except OSError as exc:  # a link loop; a folder that may not be searched is the read's to word
        return f"a link that cannot be followed ({exc.strerror})" if path.is_symlink() else None
    if stat.S_ISREG(mode):
        return None
    what = workspace_files.kind_of(mode)  # ("a folder", "a named pipe (FIFO)", "a character device"...)
    return f"a link to {what} ({os.readlink(path)})" if path.is_symlink() else what


def refuse_if_in_the_way(path: Path) -> None:
    """DataError, nothing written, where `path` is no plain file that can be replaced: a link
    (to anything: a record kept elsewhere is read through its link, never written through it,
    for a link in a cloned workspace may point at .git/config, a file of the user's, or another
    workspace's record, which that workspace's lock guards; its folder a link, as memory/ may
    be, alike), or what `not_a_file` words. Every
    atomic write asks (atomic_io), and `create` before its "already exists", as `--force` does
    not help: kernelscope deletes nothing."""
    if path.parent.is_symlink():  # memory/ itself a link: every write would land where it points
        raise DataError(
            f"refusing to write {path}: its folder {path.parent} is a link (to "
            f"{os.readlink(path.parent)}), and kernelscope writes nothing through a link; nothing "
            "was changed (put the folder itself in place of the link)"
        )
    if path.is_symlink() and not_a_file(path) is None:
        raise DataError(
            f"refusing to write {path}: it is a link (to {os.readlink(path)}), and kernelscope "
            "writes nothing through a link; nothing was changed (to change the record, put the "
            "file itself in place of the link)"
        )
    what = not_a_file(path)
    if what is not None:
        raise DataError(
            f"refusing to write {path}: it is {what}, not a file; nothing was changed "
            "(move it away or fix the link: kernelscope replaces nothing it cannot read)"
        )


def read_file(number: int, path: Path, text: str | None = None) -> RawFile:
    """The record file `path`; `text`: its content as a cut-short write leaves it (read from
    its journal, not from the file)."""
    what = not_a_file(path) if text is None else None
    if what is not None:  # (never opened: a pipe would block the read)
        return RawFile(number, path, None, f"{path.name} is {what}, not a record file")
    try:
        text = workspace_files.read_text(path) if text is None else text
        raw = load_json(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = parse_error_line(text, exc) if isinstance(exc, json.JSONDecodeError) and text else None
        return RawFile(number, path, None, f"{path.name}: not valid JSON ({exc})", error_line=line)
    if not isinstance(raw, dict):
        return RawFile(number, path, None, f"{path.name}: expected a JSON object, got {type(raw).__name__}")
    data = with_version(raw, number)
    if not certainly_valid(data):
        return RawFile(number, path, raw, None, text, vouched=False)
    if parse_version(data["version"]) != number:
        said = mismatch(path, data["version"], number)
        return RawFile(number, path, raw, said, text, error_line=key_line(text, "version"))
    return RawFile(number, path, raw, None, text)


def key_line(text: str, key: str) -> int | None:
    """The 1-based line of a record's top-level `key` in its text (None: no line begins with
    it, as in a record written on one line, whose every field is on line 1): of the lines
    beginning with it as a key, the least indented, which in a pretty-printed record
    (kernelscope writes them with indent 2) is the top level's; of several at that indent the
    last, whose value JSON keeps. Where a warning on the record points (a field the record model
    refuses, the version). Lines are counted once, for the line chosen: an agent's record can
    name the key thousands of times inside its search_log."""
    named = re.compile(rf'^([ \t]*)"{re.escape(key)}"\s*:', re.MULTILINE)
    chosen = None
    for match in named.finditer(text):
        if chosen is None or len(match.group(1)) <= len(chosen.group(1)):
            chosen = match
    return None if chosen is None else text.count("\n", 0, chosen.start()) + 1


def parse_error_line(text: str, exc: json.JSONDecodeError) -> int:
    """The 1-based line a JSON error is about, within the text's lines: where the parse stopped,
    or the last line where it stopped past the end (a text ending with a newline)."""
    return max(1, min(exc.lineno, text.rstrip("\n").count("\n") + 1))


def record_files(memory_dir: Path) -> list[tuple[int, Path]]:
    """(number, path) of every `v<N>.json` in memory/, numerically sorted (v10 after v9). The
    file of a version is `v<N>.json`; one named with leading zeros (`v010.json`, as the seed's
    script reads it) is that version's when no `v<N>.json` is there. Whatever holds the name
    is listed, a folder or a dangling link too (`read_file` says what it is): it holds the
    version, so the listing, the next version and the writers that refuse it agree."""
    if not memory_dir.is_dir():
        return []
    found = []
    for path in memory_dir.iterdir():
        match = FILE_RE.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    hidden = shadowed([(number, path.name) for number, path in found])
    return sorted(((n, path) for n, path in found if path.name not in hidden), key=lambda item: item[0])


def version_taken(memory_dir: Path, version: str) -> bool:
    """Whether a version's name is taken in memory/: by whatever `record_files` lists for it
    (a record, a corrupt file, a folder, a dangling link, a `v010.json`), the rule
    `next-version` counts by. Not `path.exists()`, which is False for a dangling link."""
    number = parse_version(normalize_version(version))
    return any(n == number for n, _path in record_files(memory_dir))


def shadowed(files: list[tuple[int, str]]) -> set[str]:
    """The names among (version number, file name) that are not their version's file: a
    `v010.json` beside a `v10.json`. (A list, not a generator: a caller's generator would run
    its module's code from inside this one, a climb tests/lsp/test_save_flow.py forbids.)"""
    plain = {number for number, name in files if name == f"v{number}.json"}
    return {name for number, name in files if number in plain and name != f"v{number}.json"}


def file_of(memory_dir: Path, version: str) -> tuple[int, Path]:
    """One version's file; DataError when it does not exist. A file named with leading zeros
    (`v010.json`, which the listing and the seed's script take as v10) is that version's
    when no `v10.json` is there."""
    normalized = normalize_version(version)
    number = parse_version(normalized)
    path = memory_dir / f"{normalized}.json"
    if os.path.lexists(path):  # (a folder or a dangling link too: record_files)
        return number, path
    named = [found for n, found in record_files(memory_dir) if n == number]
    if len(named) == 1:
        return number, named[0]
    raise DataError(f"{normalized} not found: no file {path}")


def field_of(raw: dict[str, Any], version: str, field: str | None) -> Any:
    """The record, or one dotted field of it (DataError naming the version when absent)."""
    if field is None:
        return raw
    try:
        return get_path(raw, field.split("."))
    except KeyError as exc:
        raise DataError(f"{version}: {exc.args[0]}") from None


# What `memory list --json` prints of a version's summary row, in this order (both CLI paths
# print through `listed`).
LISTED_FIELDS = (
    "version",
    "masked",
    "gate",
    "latency_us",
    "tflops",
    "bandwidth_gbps",
    "latency_ratio",
    "latency_ratio_note",
    "score",
    "action",
    "path",
    "error",
    "outcome",
    "carried_from",
    "speedup_vs_reference",
    "reference_aggregate",
    "coverage",
    "experiments",
    "open_directions",
)


# `memory list`'s table: the one score, then the recorded latency (a measurement, not a score)
LIST_COLUMNS = ("version", "masked", "gate", "score vs v0", "latency (us)")


def latency_cell(latency: float | None, coverage: str | None) -> str:
    """A table's latency cell: `5.000 (1 of 3 workloads)` for a figure over part of v0's
    workloads, `- (0 of 3 workloads)` where none was measured."""
    shown = "-" if latency is None else f"{latency:.3f}"
    return shown if coverage is None else f"{shown} ({coverage})"


def measured_latency(record: Any) -> float | None:
    """`performance.latency_us` when positive: SOL's gate writes 0.0 when no workload passed
    (atrex_fields.workload_coverage), which is no latency."""
    return _positive(metric(record, "latency_us"))


def listed(row: dict[str, Any]) -> dict[str, Any]:
    """A summary row as `memory list --json` prints it (absent fields as null)."""
    return {key: row.get(key) for key in LISTED_FIELDS}


def metric(record: Any, name: str) -> float | None:
    """A performance metric of a record (the raw object or its model) as a float."""
    return as_float(section_get(section_get(record, "performance"), name))


# -- the one score of a version -----------------------------------------------------------
# Every surface shows it (memory/scores.py wraps it for the models), and every "best" is the
# version it ranks highest (scores.best_score). In a fixed order:
# 0. `performance.performance_score` / v0's when both records carry the same objective (atrex
#    v0.3.0's mean of per-shape speedups, atrex_fields.objective_ratio), named a metric ratio:
#    atrex promotes by it, so the best is the version atrex promoted;
# 1. `kernelscope.score_vs_v0`: the in-run geometric-mean speedup over all configurations, with
#    its 95% interval (`kernelscope.score_ci`), when the record has it (`kernelscope iterate`).
#    Its bytes and FLOPs per configuration are the problem's (reference.py), the same for v0
#    and the version, so it is also their GB/s and TFLOP/s ratio, measured in one run;
# 2. else the latency ratio v0 latency / version latency, when both records have a latency
#    (records of other tools, and atrex records whose objective is not v0's: a workspace
#    upgraded from v0.2), named a latency ratio, never a speedup. Latency before the README's
#    metric (ARCHITECTURE.md: "from latency when both have it"): a version that moves more bytes
#    per run reaches a higher GB/s yet is slower, and slower is not better;
# 3. else, when the README's primary metric (its first stop condition) is a bandwidth or a
#    TFLOP/s and both records carry it, the ratio of the version's to v0's, named a metric ratio.
# Carried-forward numbers (an atrex pivot's) are never a score, nor figures over part of v0's
# workloads (atrex_fields.workload_coverage: SOL's gate writes a failed version's geomean over
# the workloads that passed). A record that ran every workload of v0's and more (workload.jsonl
# grown since) has its latency ratio taken over v0's workloads only (latency_ratio), and says so.


def kernelscope_block(record: Any) -> dict[str, Any]:
    """The record's `kernelscope` block (written by `kernelscope iterate`), or {}."""
    block = section_get(record, "kernelscope")
    return block if isinstance(block, dict) else {}


def _interval(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        low, high = as_float(value[0]), as_float(value[1])
        if low is not None and high is not None:
            return (low, high)
    return None


def _positive(value: Any) -> float | None:
    number = as_float(value)
    return number if number is not None and number > 0 and math.isfinite(number) else None


ScoreParts = tuple[float, str, str, "tuple[float, float] | None", str]  # value, kind, versus, ci, source


# The `kind` of a reader that did not parse the README (the CLI's fast path): score_parts
# raises KindNeeded where the README's primary metric would decide the score.
README_UNREAD = "readme-unread"


class KindNeeded(Exception):
    """Only the README's primary metric can score this record (no latency to compare, a
    bandwidth or TFLOP/s on both sides): a reader that did not parse the README must not show
    a score there, or show none."""


def score_parts(
    record: Any, baseline: Any, kind: str | None = None, v0: atrex_fields.BaseWorkloads | None = None
) -> ScoreParts | None:
    """The one score of `record` (raw object or model) against v0's `baseline` record (`v0`:
    its workloads read once, by a caller scoring many versions against it)."""
    if not atrex_fields.record_outcome(record).measured:
        return None
    if baseline is not None and v0 is None:
        v0 = atrex_fields.BaseWorkloads(baseline)
    if v0 is not None and atrex_fields.workload_coverage(record, v0) is not None:
        return None  # a figure over part of v0's workloads (a failed SOL version's) is no score
    if baseline is not None:
        performance, base_performance = (
            section_get(record, "performance"),
            section_get(baseline, "performance"),
        )
        by_objective = atrex_fields.objective_ratio(performance, base_performance)
        if by_objective is not None:
            return (by_objective, "metric_ratio", "v0", None, "performance.performance_score")
        if atrex_fields.objective_unscored(performance, base_performance):
            return None  # (no score of the objective v0 is scored by: none of another kind)
    block = kernelscope_block(record)
    in_run = _positive(block.get("score_vs_v0"))
    if in_run is not None:
        interval = _interval(block.get("score_ci"))
        if interval is not None and not interval[0] <= in_run <= interval[1]:
            interval = None  # an older v0 record: 1.0 beside the interval of its speedup over the reference
        return (in_run, "speedup", "v0", interval, "kernelscope.score_vs_v0")
    if baseline is None:
        return None
    base_latency, latency = _positive(metric(baseline, "latency_us")), _positive(metric(record, "latency_us"))
    if base_latency and latency:  # (overflowing, it is no score: never the README metric's instead)
        by_latency = latency_ratio(record, baseline, v0)
        return None if by_latency is None else (by_latency[0], "latency_ratio", "v0", None, by_latency[1])
    if kind == README_UNREAD:
        if any(_metric_ratio(record, baseline, name) for name in ("bandwidth", "tflops")):
            raise KindNeeded
        return None
    return _metric_ratio(record, baseline, kind) if kind in ("bandwidth", "tflops") else None


# The score's `source` where v0's latency and the record's are unlike figures (a slowest
# workload's, a geomean: atrex_fields.comparable_latencies) taken as geomeans over their shared workloads.
OVER_SHARED = "performance.latency_us_by_shape (geomean over the shared workloads)"


def latency_ratio(
    record: Any, base: Any, workloads: atrex_fields.BaseWorkloads | None = None
) -> tuple[float, str] | None:
    """(the base's latency / the record's, the field it is from): the recorded latencies', or,
    where the record ran every workload of the base's and more (atrex_fields.grown_workloads),
    the ratio of their geomeans over the base's workloads only, from `latency_us_by_shape`
    (atrex_fields.OVER_V0_WORKLOADS); None where the ratio overflows. The score vs v0 and the
    effect vs a parent both take it (`workloads`: the base's, read once by the caller)."""
    theirs = workloads if workloads is not None else atrex_fields.BaseWorkloads(base)
    mine = atrex_fields.latency_by_shape(record) if theirs.geomean else {}
    shared = atrex_fields.grown_workloads({k: v for k, v in mine.items() if v > 0}, theirs)
    if shared is None:  # (as one figure: a slowest workload's beside a geomean is none)
        latencies = atrex_fields.comparable_latencies(base, record)
        before, now = _positive(latencies.a), _positive(latencies.b)
        value = ratio(before, now) if before and now else None
        same = latencies.figure in (None, atrex_fields.GEOMEAN, atrex_fields.SLOWEST)
        return None if value is None else (value, "performance.latency_us" if same else OVER_SHARED)
    try:  # (a geomean of the per-workload ratios: logs, so no product overflows)
        logs = (math.log(theirs.latencies[name]) - math.log(mine[name]) for name in shared)
        value = math.exp(sum(logs) / len(shared))
    except OverflowError:
        return None
    return (value, atrex_fields.OVER_V0_WORKLOADS) if math.isfinite(value) and value > 0 else None


def _metric_ratio(record: Any, baseline: Any, kind: str) -> ScoreParts | None:
    """The ratio of the README's target metric (bandwidth, TFLOP/s) to v0's."""
    name = RECORD_METRIC[kind]
    base_value, value = _positive(metric(baseline, name)), _positive(metric(record, name))
    by_metric = ratio(value, base_value) if base_value and value else None
    if by_metric is not None:
        return (by_metric, "metric_ratio", "v0", None, f"performance.{name}")
    return None


def summary_row(
    number: int,
    path: Path,
    raw: dict[str, Any] | None,
    error: str | None,
    base: dict[str, Any] | None,
    kind: str | None = None,
    v0: atrex_fields.BaseWorkloads | None = None,
) -> dict[str, Any]:
    """One `VersionSummary` (protocol/workspace.py), from the raw record: gate, metrics, the
    latency ratio vs v0, the one score (README_UNREAD as `kind`: KindNeeded where the README
    would decide it), and what today's atrex supervisor records. `v0`: `base`'s workloads,
    read once by a caller listing every version (atrex_fields.BaseWorkloads)."""
    row: dict[str, Any] = {"version": format_version(number), "masked": None, "path": str(path)}
    if raw is None or error is not None:
        row["error"] = error  # masked stays None: unknown, the file may well say true
        return row
    if base is not None and v0 is None:
        v0 = atrex_fields.BaseWorkloads(base)
    score = score_parts(raw, base, kind, v0)
    outcome = atrex_fields.record_outcome(raw)
    latency = measured_latency(raw) if outcome.measured else None
    # v0's latency and this one's as one figure (atrex_fields.comparable_latencies)
    latencies = (
        atrex_fields.comparable_latencies(base, raw, ("v0", row["version"]))
        if base is not None and latency
        else None
    )
    latencies = latencies or atrex_fields.LatencyPair(None, None, None)
    notes = atrex_fields.experiments(raw)
    directions = atrex_fields.open_directions(raw)
    action = section_get(raw.get("optimization"), "action_category")
    reference = atrex_fields.speedup_vs_reference(raw, v0) if outcome.measured else None
    coverage = (
        atrex_fields.workloads_note(raw, v0, None if score is None else score[4]) if v0 is not None else None
    )
    row.update(
        masked=masked(raw.get("masked")),
        gate=gate_result(raw.get("quality_gate"), raw.get("correctness")),
        latency_us=latency,
        tflops=metric(raw, "tflops"),
        bandwidth_gbps=metric(raw, "bandwidth_gbps"),
        latency_ratio=ratio(latencies.a, latencies.b) if latencies.a and latencies.b else None,
        latency_ratio_note=latencies.why,
        score=None
        if score is None
        else {"value": score[0], "kind": score[1], "versus": score[2], "ci": score[3], "source": score[4]},
        action=None if action is None else str(action),
        outcome=outcome.label,
        carried_from=outcome.carried_from,
        speedup_vs_reference=None if reference is None else reference.value,
        reference_aggregate=None if reference is None else reference.aggregate,
        coverage=coverage,
        experiments=len(notes) if notes else None,
        open_directions=len(directions) if directions else None,
    )
    return row
