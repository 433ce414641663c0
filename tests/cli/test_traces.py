"""Results in the field's trace format: `kernelscope bench --trace FILE` writes FlashInfer-Bench
Trace records that FlashInfer-Bench's own model and loader accept, and `kernelscope
import-traces FILE` brings Trace records (kernelscope's, SOL-ExecBench's) into the experiment
store as imported experiments, all or nothing.

The benchmarks run under the CPU interpreter (a few seconds each); FlashInfer-Bench is
installed by scripts/bootstrap.sh (dev extra, --no-deps)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.daemon.engine.store.traces import (
    Trace,
    import_traces,
    log_marker,
    read_traces,
    traces_from_bench,
)
from kernelscope.protocol.bench import BenchError, BenchResult, ConfigResult
from kernelscope.protocol.experiment import KernelExperiment
from tests.conftest import EXAMPLES, FIXTURES
from tests.support.bench_fixtures import make_workspace
from tests.support.sol_workspace import make_sol_workspace

SOL_FIXTURE = FIXTURES / "traces" / "sol_execbench_traces.jsonl"
Cli = Callable[..., Any]


def flashinfer_trace() -> Any:
    """FlashInfer-Bench's own Trace model (imported here: a missing install fails the test)."""
    from flashinfer_bench.data import Trace as FlashInferTrace

    return FlashInferTrace


def check_with_flashinfer(path: Path) -> list[Any]:
    """Every line through FlashInfer-Bench's model, and the file through its JSONL loader."""
    from flashinfer_bench.data import load_jsonl_file

    model = flashinfer_trace()
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    for line in lines:
        model.model_validate_json(line)
    loaded = load_jsonl_file(model, path)
    assert len(loaded) == len(lines)
    return loaded


def bench(cli: Cli, ws: Path, trace: Path, *extra: str) -> Any:
    result = cli(
        "bench", "-w", str(ws), "--mode", "interpreter", "--seeds", "1", "--trace", str(trace), *extra
    )
    return result


def imported(cli: Cli, db: Path, *filters: str) -> list[dict[str, Any]]:
    listed = cli("exp", "list", "--db", str(db), "--json", *filters)
    assert listed.exit_code == 0, listed.stderr
    return listed.json()  # type: ignore[no-any-return]


@pytest.mark.slow
def test_bench_trace_appends_records_flashinfer_accepts_and_they_import(cli: Cli, tmp_path: Path) -> None:
    ws = tmp_path / "vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    trace = tmp_path / "out" / "traces.jsonl"
    first = bench(cli, ws, trace, "--json")
    assert first.exit_code == 0, first.stdout + first.stderr
    result = BenchResult.model_validate_json(first.stdout)
    records = check_with_flashinfer(trace)
    assert len(records) == len(result.configs) > 0
    for record, config in zip(records, result.configs, strict=True):
        assert record.definition == "vector_add"  # the workspace folder's name
        assert record.workload.uuid == config.name
        assert record.solution == "kernel.py"  # not in git: no commit to add
        evaluation = record.evaluation
        assert evaluation.status.value == "PASSED"
        assert evaluation.environment.hardware == "cpu-interpreter"
        assert evaluation.environment.libs["torch"] == result.env["torch"]
        # interpreter timings are not GPU latencies: the schema's zero defaults, said in the log
        assert evaluation.performance.model_dump() == {
            "latency_ms": 0.0,
            "reference_latency_ms": 0.0,
            "speedup_factor": 0.0,
        }
        assert "not GPU latencies" in evaluation.log
        assert log_marker(evaluation.log)["mode"] == "interpreter"
    written = trace.read_text()

    second = bench(cli, ws, trace)
    assert second.exit_code == 0, second.stderr
    assert trace.read_text().startswith(written)  # appended, the first records untouched
    assert len(check_with_flashinfer(trace)) == 2 * len(records)

    db = tmp_path / "exp.sqlite"
    done = cli("import-traces", str(trace), "-w", str(ws), "--db", str(db), "--json")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert done.json()["inserted"] == 2 * len(records)
    rows = imported(cli, db, "--tag", "imported")
    assert len(rows) == 2 * len(records)
    for row in rows:
        assert {"imported", "trace", f"source:{trace.resolve()}"} <= set(row["tags"])
        assert row["score"] is None  # no GPU timing, no score
        assert row["status"] == "done" and not row["is_buggy"]
        assert row["kernels"] == ["trace:vector_add"]
        assert row["workspace"] == str(ws.resolve())
        assert row["env"].startswith("cpu-interpreter")
        assert row["change_summary"].startswith("imported trace: kernel.py on ")
    summary = cli("exp", "summary", "-w", str(ws), "--db", str(db), "--json")
    assert [s["kernel"] for s in summary.json()] == ["trace:vector_add"]
    again = cli("import-traces", str(trace), "-w", str(ws), "--db", str(db), "--json")
    assert (again.json()["inserted"], again.json()["skipped"]) == (0, 2 * len(records))


@pytest.mark.slow
def test_a_wrong_kernel_writes_incorrect_numerical(cli: Cli, tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "bad", "wrong")
    trace = tmp_path / "traces.jsonl"
    run = bench(cli, ws, trace)
    assert run.exit_code == 3, run.stderr
    records = check_with_flashinfer(trace)
    assert records
    for record in records:
        evaluation = record.evaluation
        assert evaluation.status.value == "INCORRECT_NUMERICAL"
        assert evaluation.performance is None
        assert evaluation.correctness.max_absolute_error > 0  # read back from the gate's message
        assert log_marker(evaluation.log)["kind"] == "wrong_result"

    db = tmp_path / "exp.sqlite"
    assert cli("import-traces", str(trace), "--db", str(db)).exit_code == 0
    rows = imported(cli, db, "--tag", "imported")
    assert len(rows) == len(records)
    for row in rows:
        assert row["is_buggy"] and row["status"] == "failed" and row["score"] is None
        assert row["error_message"].startswith("INCORRECT_NUMERICAL (wrong_result): ")
        assert row["metrics"]["trace"]["kernelscope_kind"] == "wrong_result"


@pytest.mark.slow
def test_a_sol_execbench_workspace_names_its_definition_and_workloads(cli: Cli, tmp_path: Path) -> None:
    ws = make_sol_workspace(tmp_path / "kernel_opt_rmsnorm")
    trace = tmp_path / "traces.jsonl"
    run = bench(cli, ws, trace)
    assert run.exit_code == 0, run.stderr
    records = check_with_flashinfer(trace)
    definition = json.loads((ws / "definition.json").read_text())
    workloads = [json.loads(line) for line in (ws / "workload.jsonl").read_text().splitlines() if line]
    assert [r.definition for r in records] == [definition["name"]] * len(workloads)
    assert [r.workload.uuid for r in records] == [w["uuid"] for w in workloads]
    solution = json.loads((ws / "solution.json").read_text())["name"]
    assert all(r.solution.startswith(f"{solution}@") for r in records)  # + the commit of kernel.py
    for record, workload in zip(records, workloads, strict=True):
        assert set(record.workload.inputs) == set(workload["inputs"])
        if record.workload.axes != workload["axes"]:  # shrunk for the interpreter, and said so
            assert "axes run smaller" in record.evaluation.log


def test_a_malformed_line_is_named_and_nothing_is_written(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "exp.sqlite"
    assert cli("import-traces", str(SOL_FIXTURE), "--db", str(db)).exit_code == 0
    before = imported(cli, db)
    good = SOL_FIXTURE.read_text().splitlines()
    bad_status = json.loads(good[1])
    bad_status["evaluation"]["status"] = "GREAT"
    for number, line in ((3, json.dumps(bad_status)), (2, "{not json")):
        lines = [good[3], good[4], good[5]]
        lines.insert(number - 1, line)
        path = tmp_path / f"bad{number}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        plain = cli("import-traces", str(path), "--db", str(db))
        assert plain.exit_code == 2
        assert f"{path.resolve()}:{number}:" in plain.stderr and "nothing imported" in plain.stderr
        as_json = cli("import-traces", str(path), "--db", str(db), "--json")
        assert as_json.exit_code == 2
        error = as_json.json()["error"]  # one JSON document
        assert error["exit_code"] == 2 and f":{number}:" in error["message"]
    assert imported(cli, db) == before
    missing = cli("import-traces", str(tmp_path / "none.jsonl"), "--db", str(db))
    assert missing.exit_code == 2 and "cannot read" in missing.stderr
    not_a_dir = cli("import-traces", str(SOL_FIXTURE), "-w", str(tmp_path / "nowhere"), "--db", str(db))
    assert not_a_dir.exit_code == 1


def test_traces_written_by_sol_execbench_import(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "exp.sqlite"
    done = cli("import-traces", str(SOL_FIXTURE), "--db", str(db), "--json")
    assert done.exit_code == 0, done.stdout + done.stderr
    counts = done.json()
    assert (counts["records"], counts["inserted"], counts["workload_only"]) == (7, 6, 1)
    rows = {row["metrics"]["trace"]["line"]: row for row in imported(cli, db, "--tag", "imported")}
    assert sorted(rows) == [1, 2, 3, 4, 5, 6]
    documented = rows[1]  # docs/trace.md's example
    assert documented["score"] == pytest.approx(2.375) and documented["status"] == "done"
    assert documented["created_at"] == "2025-06-27T12:45:00Z"
    assert documented["env"] == "NVIDIA_H100; cuda 12.6; torch 2.6.0; triton 2.4.0"
    assert documented["kernels"] == ["trace:rmsnorm"]
    hack = rows[2]
    assert hack["is_buggy"] and hack["status"] == "failed" and hack["score"] is None
    assert hack["error_message"] == "REWARD_HACK: Thread injection detected: 3 threads after call vs 2 before"
    assert rows[3]["metrics"]["trace"]["correctness"]["has_nan"] is True
    assert rows[4]["score"] == pytest.approx(0.0342 / 0.0121)
    assert rows[5]["metrics"]["trace"]["status"] == "RUNTIME_ERROR"
    assert rows[6]["status"] == "timeout"
    # FlashInfer-Bench 0.1.2's model refuses what only SOL-ExecBench has (REWARD_HACK, custom
    # inputs): the reason the import validates with SOL-ExecBench's superset.
    from pydantic import ValidationError

    lines = SOL_FIXTURE.read_text().splitlines()
    with pytest.raises(ValidationError):
        flashinfer_trace().model_validate_json(lines[1])
    flashinfer_trace().model_validate_json(lines[0])


# -- the mapping, on results built here (no benchmark run) -----------------------------------


def result_with(*configs: ConfigResult, mode: str = "interpreter", **fields: Any) -> BenchResult:
    values: dict[str, Any] = {
        "status": "gate_failed",
        "passed": False,
        "mode": mode,
        "workspace": "/nowhere/vector_add",
        "candidate": "/nowhere/vector_add/kernel.py",
        "baseline": "reference",
        "entry_point": "kernel_fn",
        "configs": list(configs),
        "env": {"torch": "2.13.0+cpu", "triton": "3.9.0", "cuda": None, "gpu": "NVIDIA H200"},
    }
    return BenchResult.model_validate({**values, **fields})


def import_one(path: Path, db: Path) -> tuple[dict[str, Any], KernelExperiment]:
    """Import `path` (one record) into a fresh store at `db`: the counts and the experiment."""
    store = ExperimentStore(str(db))
    try:
        counts = import_traces(store, path)
        [row] = store.list_experiments()
    finally:
        store.close()
    return counts, row


def failed(name: str, kind: str, message: str) -> ConfigResult:
    return ConfigResult(
        name=name, params={"n": 64}, passed=False, error=BenchError(kind=kind, message=message)
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kind,message,written,sol_status",
    [
        ("cheat", "output is a view of input 0 (it shares its memory)", "RUNTIME_ERROR", "REWARD_HACK"),
        ("no_kernel", "launched no Triton kernel", "RUNTIME_ERROR", "REWARD_HACK"),
        ("cheat", "output has shape (4,), expected (5,)", "INCORRECT_SHAPE", "INCORRECT_SHAPE"),
        ("wrong_result", "output has shape (4,), expected (5,)", "INCORRECT_SHAPE", "INCORRECT_SHAPE"),
        ("wrong_result", "returned 1 outputs, the reference returns 2", "INCORRECT_SHAPE", "INCORRECT_SHAPE"),
        (
            "cheat",
            "output has dtype torch.float64, expected torch.float32",
            "INCORRECT_DTYPE",
            "INCORRECT_DTYPE",
        ),
        (
            "wrong_result",
            "output has dtype torch.float64, expected torch.float32",
            "INCORRECT_DTYPE",
            "INCORRECT_DTYPE",
        ),
        (
            "wrong_layout",
            "output has the right values in another memory layout",
            "INCORRECT_SHAPE",
            "INCORRECT_SHAPE",
        ),
        ("exception", "RuntimeError: boom", "RUNTIME_ERROR", "RUNTIME_ERROR"),
        ("timeout", "ran past 900 s", "TIMEOUT", "TIMEOUT"),
    ],
)
def test_failure_kinds_map_to_statuses(
    kind: str, message: str, written: str, sol_status: str, tmp_path: Path
) -> None:
    [trace] = traces_from_bench(result_with(failed("n=64", kind, message)), tmp_path / "vector_add")
    flashinfer_trace().model_validate_json(trace.to_line())
    assert trace.evaluation is not None and trace.evaluation.status == written
    assert {"kind": kind, "status": sol_status}.items() <= log_marker(trace.evaluation.log).items()
    path = tmp_path / "t.jsonl"
    path.write_text(trace.to_line() + "\n")
    counts, row = import_one(path, tmp_path / "exp.sqlite")
    assert counts["inserted"] == 1
    assert row.metrics["trace"]["sol_execbench_status"] == sol_status
    assert row.metrics["trace"]["kernelscope_kind"] == kind
    assert row.is_buggy and row.status == ("timeout" if kind == "timeout" else "failed")


def test_runs_without_a_verdict_and_runs_before_any_configuration(tmp_path: Path) -> None:
    ws = tmp_path / "vector_add"
    unsupported = failed("n=64", "unsupported", "bf16 under the interpreter")
    assert traces_from_bench(result_with(unsupported), ws) == []
    setup = result_with(status="error", error=BenchError(kind="setup", message="no reference.py"))
    assert traces_from_bench(setup, ws) == []
    compile_error = result_with(status="error", error=BenchError(kind="compile", message="SyntaxError"))
    [trace] = traces_from_bench(compile_error, ws)
    assert trace.evaluation is not None and trace.evaluation.status == "COMPILE_ERROR"
    assert trace.workload.uuid == "all-configurations"
    flashinfer_trace().model_validate_json(trace.to_line())


def test_gpu_results_carry_their_timings(tmp_path: Path) -> None:
    timed = ConfigResult(
        name="n=4096",
        params={"n": 4096, "dtype": "float32"},
        passed=True,
        max_abs_err=1e-7,
        max_rel_err=2e-7,
        candidate_ms=0.010,
        baseline_ms=0.025,
        speedup=2.5,
    )
    [trace] = traces_from_bench(result_with(timed, mode="gpu", status="ok", passed=True), tmp_path / "ws")
    record = flashinfer_trace().model_validate_json(trace.to_line())
    assert record.evaluation.environment.hardware == "NVIDIA H200"
    assert record.evaluation.performance.speedup_factor == 2.5
    assert record.evaluation.performance.latency_ms == 0.010
    assert record.workload.axes == {"n": 4096}
    path = tmp_path / "t.jsonl"
    path.write_text(trace.to_line() + "\n")
    [(number, parsed, _line)] = read_traces(path)
    assert number == 1 and isinstance(parsed, Trace)
    _counts, row = import_one(path, tmp_path / "exp.sqlite")
    assert row.score == 2.5 and row.metrics["trace"]["timed"] is True


def test_trace_with_candidates_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    run = cli(
        "bench", "-w", str(ws), "--candidates", str(ws / "kernel.py"), "--trace", str(tmp_path / "t.jsonl")
    )
    assert run.exit_code == 2 and "--trace" in run.stderr
    assert not (tmp_path / "t.jsonl").exists()
