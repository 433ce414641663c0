"""Reads a workspace gate command's verdict and numbers from the lines it prints.

Two formats, the later line winning within each and a `RESULT_JSON=` line winning over a bare
JSON line:

- `<prefix> RESULT_JSON=<json object>`: atrex's SOL-ExecBench `test_kernel.py` prints
  `[test_kernel] RESULT_JSON={total, passed, all_pass, failures, latency_us_by_shape,
  latency_us_geomean, latency_us_arith_mean, speedup_vs_ref_geomean, max_abs_err,
  max_rel_err}` after reducing the evaluator's traces (latencies in microseconds, keyed by
  workload uuid; each failure reads `<uuid[:8]>=<STATUS> (<axes>)`, or `seed<N>: ...` from
  its multi-seed check). Printed on success and failure alike, before its exit status.
  atrex v0.3.0's evaluators add `performance_objective` ("shape_speedup_arithmetic_mean"),
  `performance_score` and `speedup_vs_ref_mean`, with `speedup_vs_ref_geomean` null
  (Atrex-Bench's test_kernel `result_from_eval`, index id 68528712763; SOL's v0.3
  test_kernel.py is not in the index, and the supervisor reads the same keys from both).
- atrex's Atrex-Bench `test_kernel.py` prints the same line without `total` and `passed`,
  its latencies keyed by the shape ids of `shapes.json` ("0", "1", ...) and each failure read
  `sid=<id>: <stage> <reason>` (stage compile, correctness, performance or metadata), or
  `evaluation: ...` for the whole run.
- a bare JSON object line (kernelscope's own older contract): `{"passed", "message",
  "configs": [{"name", "passed", "max_abs_err", "max_rel_err", "message"}]}`.

Lines arrive one at a time while the gate runs (the output file keeps only a tail, and a
RESULT_JSON line with a hundred workloads is longer than that tail), so the collector keeps
just the last candidate line of each kind.
"""

from __future__ import annotations

import ast
import contextlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelscope.daemon.engine import load_json
from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.workspace.kinds import atrex_bench_shapes, sol_workloads
from kernelscope.protocol.bench import BenchError, ConfigResult, ErrorKind, GateReport

RESULT_JSON = re.compile(r"^(?P<prefix>.*?)\s*RESULT_JSON=(?P<body>\{.*\})\s*$")
# `<uuid prefix>=<STATUS> (<axes>)`, as atrex's test_kernel.py names a failed workload.
FAILURE = re.compile(r"^(?P<id>[\w.-]+)=(?P<status>[A-Z_]+)(?:\s+\((?P<axes>.*)\))?$")
STATUS_KINDS: dict[str, ErrorKind] = {  # SOL-ExecBench's EvaluationStatus -> kernelscope's failure kinds
    "INCORRECT_SHAPE": "wrong_result",
    "INCORRECT_NUMERICAL": "wrong_result",
    "INCORRECT_DTYPE": "wrong_result",
    "RUNTIME_ERROR": "exception",
    "COMPILE_ERROR": "compile",
    "TIMEOUT": "timeout",
}
# `sid=<shape id>: <stage> <reason>`, as atrex's Atrex-Bench test_kernel.py names a failed shape.
SHAPE_FAILURE = re.compile(r"^sid=(?P<id>[\w.-]+):\s*(?P<stage>\w+)\b\s*(?P<reason>.*)$")
STAGE_KINDS: dict[str, ErrorKind] = {  # its evaluator stages -> kernelscope's failure kinds
    "compile": "compile",
    "correctness": "wrong_result",
    "performance": "exception",
}
KNOWN_KEYS = frozenset(GateReport.model_fields) - {"command", "source", "exit_code", "extra"}
MAX_LINE_CHARS = 4 << 20  # a longer "JSON" line is not a verdict worth parsing


class GateLines:
    """Fed every line the gate prints; keeps the last RESULT_JSON line and the last JSON line."""

    def __init__(self) -> None:
        self.result_json: tuple[str, dict[str, Any]] | None = None  # (prefix, object)
        self.json_line: dict[str, Any] | None = None

    def feed(self, line: str) -> None:
        if len(line) > MAX_LINE_CHARS or "{" not in line:
            return
        text = line.strip()
        if "RESULT_JSON=" in text:
            match = RESULT_JSON.match(text)
            if match:
                with contextlib.suppress(json.JSONDecodeError):
                    body = load_json(match["body"])
                    if isinstance(body, dict):
                        self.result_json = (_source(match["prefix"]), body)
                        return
        if text.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                body = load_json(text)
                if isinstance(body, dict):
                    self.json_line = body


def _source(prefix: str) -> str:
    """`[test_kernel]` -> `test_kernel`: the name the gate gives itself."""
    return prefix.strip().strip("[]():").strip() or "gate"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def report_from(command: str, source: str, data: dict[str, Any], exit_code: int | None) -> GateReport:
    """A GateReport from a RESULT_JSON object; values of the wrong type are dropped (kept in
    `extra`), never fatal: the gate is someone else's program."""
    latencies: dict[str, float] = {}
    raw = data.get("latency_us_by_shape")
    if isinstance(raw, dict):
        for key, value in raw.items():
            number = _number(value)
            if number is not None:
                latencies[str(key)] = number
    failures = data.get("failures")
    all_pass = data.get("all_pass")
    objective = data.get("performance_objective")
    return GateReport(
        command=command,
        source=source,
        exit_code=exit_code,
        total=_count(data.get("total")),
        passed=_count(data.get("passed")),
        all_pass=all_pass if isinstance(all_pass, bool) else None,
        failures=[str(f) for f in failures] if isinstance(failures, list) else [],
        latency_us_by_shape=latencies,
        latency_us_geomean=_number(data.get("latency_us_geomean")),
        latency_us_arith_mean=_number(data.get("latency_us_arith_mean")),
        speedup_vs_ref_geomean=_number(data.get("speedup_vs_ref_geomean")),
        performance_objective=objective if isinstance(objective, str) else None,
        performance_score=_number(data.get("performance_score")),
        speedup_vs_ref_mean=_number(data.get("speedup_vs_ref_mean")),
        max_abs_err=_number(data.get("max_abs_err")),
        max_rel_err=_number(data.get("max_rel_err")),
        extra={k: v for k, v in data.items() if k not in KNOWN_KEYS},
    )


def report_says_failed(report: GateReport) -> bool:
    """A report fails when any of its fields says so: `all_pass: false`, a failure listed, or
    fewer workloads passed than ran. A missing `all_pass` is not a pass."""
    fewer = report.passed is not None and report.total is not None and report.passed < report.total
    return report.all_pass is False or bool(report.failures) or fewer


@dataclass
class Workloads:
    """The workspace's workloads, read only to name configurations: `workload.jsonl` of a
    SOL-ExecBench workspace (uuid -> axes, and a uuid prefix, as failures print it, -> the full
    uuid), or `shapes.json` of an Atrex-Bench one (shape id -> its `input_kwargs`)."""

    axes: dict[str, dict[str, Any]]

    @classmethod
    def read(cls, workspace: Path) -> Workloads:
        axes: dict[str, dict[str, Any]] = atrex_bench_shapes(workspace) or {}
        workloads, _ = sol_workloads(workspace)
        axes.update({str(w["uuid"]): w["axes"] for w in workloads or []})
        return cls(axes)

    def full_id(self, prefix: str) -> str:
        matches = [uuid for uuid in self.axes if uuid.startswith(prefix)]
        return matches[0] if len(matches) == 1 else prefix


def _params(axes: Any) -> dict[str, Any]:
    if not isinstance(axes, dict):
        return {}
    return {str(k): v for k, v in axes.items() if isinstance(v, (str, int, float, bool))}


def _failed_config(failure: str, workloads: Workloads) -> ConfigResult:
    shape = SHAPE_FAILURE.match(failure.strip())
    if shape is not None:
        name = shape["id"]
        kind = STAGE_KINDS.get(shape["stage"], "gate_command")
        if shape["reason"].strip().lower() == "missing":
            kind = "gate_command"  # no result for that stage: the evaluator's failure, not a wrong result
        elif kind == "exception" and "timeout" in shape["reason"].lower().replace(" ", ""):
            kind = "timeout"
        return ConfigResult(
            name=name,
            params=_params(workloads.axes.get(name)),
            passed=False,
            error=BenchError(kind=kind, message=failure, config=name),
        )
    match = FAILURE.match(failure.strip())
    if match is None:  # e.g. "seed2: ..." from the multi-seed check: the whole line names it
        name = failure.split(":", 1)[0].strip()[:60] or "gate"
        # Atrex-Bench's whole-run `compile: <reason>` (no shape: nothing compiled) is a compile error
        whole: ErrorKind = "compile" if name == "compile" else "gate_command"
        error = BenchError(kind=whole, message=failure, config=name)
        return ConfigResult(name=name, passed=False, error=error)
    name = workloads.full_id(match["id"])
    params = _params(workloads.axes.get(name))
    if not params and match["axes"]:
        with contextlib.suppress(ValueError, SyntaxError, MemoryError, RecursionError):
            params = _params(ast.literal_eval(match["axes"]))
    kind = STATUS_KINDS.get(match["status"], "gate_command")
    return ConfigResult(
        name=name,
        params=params,
        passed=False,
        error=BenchError(kind=kind, message=failure, config=name),
    )


def configs_from_report(report: GateReport, workspace: Path) -> list[ConfigResult]:
    """One configuration per workload, in the gate's order: measured ones with their latency
    as the candidate's median, and one per workload a failure names. A failure naming a measured
    workload (Atrex-Bench times every shape, then names the wrong ones) fails that workload's
    configuration, without its timing; further failures of one workload join its message."""
    workloads = Workloads.read(workspace)
    configs = {
        name: ConfigResult(
            name=name,
            params=_params(workloads.axes.get(name)),
            passed=True,
            candidate_ms=latency / 1000.0,
        )
        for name, latency in report.latency_us_by_shape.items()
    }
    for failure in report.failures:
        failed = _failed_config(failure, workloads)
        known = configs.get(failed.name)
        if known is None:
            configs[failed.name] = failed
        elif not known.passed and known.error is not None and failed.error is not None:
            known.error.message += "; " + failed.error.message
        else:
            configs[failed.name] = failed.model_copy(update={"params": known.params or failed.params})
    return list(configs.values())


def configs_from_json_line(details: dict[str, Any]) -> list[ConfigResult]:
    """The older contract's `configs` list; malformed items are skipped."""
    configs = []
    items = details.get("configs")
    for item in items if isinstance(items, list) else []:
        with contextlib.suppress(ValidationError, TypeError, AttributeError):
            passed = bool(item.get("passed", False))
            message = item.get("message")
            name = str(item.get("name", "?"))
            configs.append(
                ConfigResult(
                    name=name,
                    passed=passed,
                    max_abs_err=item.get("max_abs_err"),
                    max_rel_err=item.get("max_rel_err"),
                    error=None
                    if passed or not message
                    else BenchError(kind="gate_command", message=str(message), config=name),
                )
            )
    return configs


def summary(report: GateReport, measured_by: str) -> str:
    """One line with the gate's numbers, saying whose numbers they are."""
    parts = []
    if report.total is not None and report.passed is not None:
        parts.append(f"{report.passed}/{report.total} workloads passed")
    if report.latency_us_geomean:
        parts.append(f"geomean latency {report.latency_us_geomean:.4g} us")
    speedup = atrex_fields.reference_speedup(report)  # the rule every record is read by
    if speedup is not None and speedup.value:
        parts.append(f"{speedup.value:.3f}x vs its reference ({speedup.aggregate})")
    if report.max_abs_err is not None or report.max_rel_err is not None:
        parts.append(f"max abs/rel error {report.max_abs_err or 0:.2e}/{report.max_rel_err or 0:.2e}")
    return f"measured by the workspace's {measured_by}: " + (", ".join(parts) or "no numbers")


def measured_by(argv: list[str], source: str | None) -> str:
    """The script a gate command runs (`test_kernel.py`), else the name it prints, else the
    program: how messages name whose numbers these are."""
    for word in argv:
        if word.endswith(".py"):
            return Path(word).name
    if source and source != "gate":
        return source
    return Path(argv[0]).name if argv else "gate command"
