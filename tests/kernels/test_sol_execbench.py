"""The SOL-ExecBench adapter: a workspace seeded by atrex's sol_seed.py benchmarks as it is.

The CLI tests run `kernelscope bench` on a built workspace under the CPU interpreter (one
configuration per workload, the workload's tolerance, shrunk var axes reported, wrong
results and unsupported inputs classified, nothing written into the workspace). The
in-process tests pin the format decisions taken from upstream: input order and sources,
expr axes, shrinking rules, custom inputs, both calling conventions.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelscope.kernels.adapters import ProblemError, load_problem
from kernelscope.kernels.adapters.sol_execbench import (
    INTERPRETER_ELEMENT_CAP,
    SolExecBenchProblem,
    evaluate_axis_expression,
    shrink_for_interpreter,
)
from tests.support.sol_workspace import (
    HIDDEN_SIZE,
    SAFETENSORS_UUID,
    WORKLOADS,
    definition,
    make_sol_workspace,
)

KERNELSCOPE = Path(sys.executable).with_name("kernelscope")


def bench_cli(ws: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """`kernelscope bench -w WS --mode interpreter --json ARGS`: (exit status, result, stderr).

    Run without PYTHONDONTWRITEBYTECODE, as in a user's shell, so that a bytecode cache the
    runner writes next to kernel.py would show in the workspace."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [str(KERNELSCOPE), "bench", "-w", str(ws), "--mode", "interpreter", "--json", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    return done.returncode, json.loads(done.stdout), done.stderr


def assert_verdict(ws: Path, kind: str | None, says: str | None = None) -> None:
    """`bench_cli(ws, "--seeds", "2")` passes (`kind` None), or fails as `kind` with `says` in
    its message."""
    code, result, stderr = bench_cli(ws, "--seeds", "2")
    error = result.get("error") or {}
    if kind is None:
        assert code == 0 and result["passed"], (stderr, error)
        return
    assert result["passed"] is False and error.get("kind") == kind, (stderr, error)
    assert says is None or says in error["message"], error["message"]


def untouched(ws: Path) -> str:
    """What `git status --porcelain` sees in the workspace beyond the seed commit."""
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout


def expected_name(uuid: str, rows: int) -> str:
    return f"{uuid} num_rows={rows}"


# -- the CLI on seeded workspaces ------------------------------------------------------------


@pytest.mark.slow
def test_honest_kernel_passes_one_config_per_workload(tmp_path: Path) -> None:
    ws = make_sol_workspace(tmp_path / "kernel_opt_rmsnorm")
    code, result, stderr = bench_cli(ws, "--seeds", "2")
    assert code == 0, (stderr, result.get("error"))
    assert result["status"] == "ok" and result["passed"] is True
    assert result["entry_point"] == "run"  # solution.json's kernel.py::run, not --entry's default
    configs = result["configs"]
    assert [c["name"] for c in configs] == [expected_name(uuid, rows) for uuid, rows, _, _ in WORKLOADS]
    assert [c["params"]["uuid"] for c in configs] == [uuid for uuid, *_ in WORKLOADS]
    # each workload's own tolerance; the third has none, so upstream's 1e-2 defaults
    assert [c["tolerance"] for c in configs] == [
        "|out - ref| <= 1e-05 + 1e-05 * |ref| on >= 0.99 of elements (SOL-ExecBench)",
        "|out - ref| <= 0.0001 + 0.001 * |ref| on >= 0.99 of elements (SOL-ExecBench)",
        "|out - ref| <= 0.01 + 0.01 * |ref| on >= 0.99 of elements (SOL-ExecBench)",
    ]
    # var axis shrunk where the workload is too big for the interpreter, said per config;
    # the const axis (hidden_size) never appears
    assert configs[0]["shrunk_for_interpreter"] == {"num_rows": [8192, 128]}
    assert configs[1]["shrunk_for_interpreter"] is None
    assert configs[2]["shrunk_for_interpreter"] == {"num_rows": [1000, 250]}
    for config in configs:
        assert config["passed"] and config["speedup"] and config["gbps"]
        assert "hidden_size" not in (config["shrunk_for_interpreter"] or {})
    # the score, a geometric-mean speedup over the reference, is geomean(reference latency) /
    # geomean(candidate latency): higher score == lower geomean latency, SOL-ExecBench's goal
    geomean = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
    base, cand = [c["baseline_ms"] for c in configs], [c["candidate_ms"] for c in configs]
    assert math.isclose(result["score"], geomean(base) / geomean(cand), rel_tol=1e-9)
    assert untouched(ws) == ""  # nothing written in the workspace


@pytest.mark.slow
def test_wrong_kernel_fails_as_a_wrong_result(tmp_path: Path) -> None:
    ws = make_sol_workspace(tmp_path / "ws", "wrong")
    code, result, _ = bench_cli(ws, "--seeds", "1")
    assert code == 3
    assert result["status"] == "gate_failed" and result["passed"] is False
    assert result["error"]["kind"] == "wrong_result"
    for config in result["configs"]:
        assert config["error"]["kind"] == "wrong_result"
        assert "output 0 differs from the reference" in config["error"]["message"]
    assert result["score"] is None
    assert untouched(ws) == ""


COLUMN_SUM = "import torch\n\n\n@torch.no_grad()\ndef run(x):\n    return x.sum(dim=0)\n"
# Honest under SOL-ExecBench's contract: a destination-passing solution's outputs arrive
# zero-filled (io.allocate_outputs for the checks; ShiftingMemoryPoolAllocator.get_unique_args
# zeroes them before every timed call, untimed), so a kernel may accumulate into them.
ATOMIC_COLUMN_SUM = """
import triton
import triton.language as tl


@triton.jit
def _column_sum(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * cols + offs, mask=offs < cols, other=0.0)
    tl.atomic_add(y_ptr + offs, x, mask=offs < cols)


def run(x, y):
    _column_sum[(x.shape[0],)](x, y, x.shape[1], BLOCK=256)
"""


@pytest.mark.slow
def test_kernel_accumulating_into_its_zeroed_outputs_passes(tmp_path: Path) -> None:
    """The timed calls get zeroed outputs too, as upstream's: an atomic-add kernel is neither
    wrong nor "a replayed, cached or lazily computed output" (what reusing the previous call's
    outputs made of it), and its timed outputs are checked."""
    defn = {
        "name": "column_sum",
        "axes": {"rows": {"type": "var"}, "cols": {"type": "const", "value": 256}},
        "inputs": {"x": {"shape": ["rows", "cols"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["cols"], "dtype": "float32"}},
    }
    workload = {"uuid": "w", "axes": {"rows": 64}, "inputs": {"x": {"type": "random"}}}
    write_problem(tmp_path, defn, [workload], COLUMN_SUM, ATOMIC_COLUMN_SUM, {"languages": ["triton"]})
    code, result, stderr = bench_cli(tmp_path, "--seeds", "2")
    assert code == 0, (result.get("error"), stderr[-2000:])
    [config] = result["configs"]
    assert config["upstream"]["passed"] is True and config["timed_outputs_checked"] >= 2


@pytest.mark.slow
def test_safetensors_workload_is_reported_unsupported_with_the_reason(tmp_path: Path) -> None:
    ws = make_sol_workspace(tmp_path / "ws", safetensors=True)
    code, result, _ = bench_cli(ws, "--seeds", "1")
    assert code == 2  # not the kernel's fault: a setup-class exit
    assert result["status"] == "unsupported" and result["passed"] is False
    *runnable, blob = result["configs"]
    assert all(c["passed"] for c in runnable)  # the other workloads still ran
    assert blob["name"] == expected_name(SAFETENSORS_UUID, 64) and not blob["passed"]
    message = blob["error"]["message"]
    assert blob["error"]["kind"] == "unsupported"
    assert f"workload {SAFETENSORS_UUID}" in message and "input 'weight'" in message
    assert "safetensors" in message and "does not load blobs" in message
    assert untouched(ws) == ""


@pytest.mark.slow
def test_sol_seed_v0_in_pytorch_benches_as_its_solution_declares(tmp_path: Path) -> None:
    """V0 as sol_seed writes it (atrex 16f7ec4, reference/sol_seed.py `_solution_json`): the
    reference renamed `_ref` inside a DPS `run`, PyTorch only, and solution.json's languages
    ["pytorch"]. SOL-ExecBench accepts a PyTorch solution, so it benches, with no comment of
    kernelscope's in it: no triton-impl, in `kernelscope check` either, and no no_kernel. Once
    solution.json declares Triton (the migration atrex asks for), the same PyTorch file is refused
    by the static gate (triton-impl) and, with the static rules off, finds no kernel."""
    ws = make_sol_workspace(tmp_path / "ws", "v0")
    code, result, stderr = bench_cli(ws, "--seeds", "1")
    assert code == 0 and result["passed"], (stderr, result.get("error"))
    assert len(result["configs"]) == len(WORKLOADS)
    declared = "solution.json declares languages pytorch (no Triton): Triton launches were not required"
    assert declared in result["messages"]
    check = subprocess.run(
        [str(KERNELSCOPE), "check", "-w", str(ws), "--json"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    assert not [n for n in json.loads(check.stdout)["notices"] if n["code"].startswith("static:triton")]
    solution = json.loads((ws / "solution.json").read_text())
    solution["spec"]["languages"] = ["triton"]
    (ws / "solution.json").write_text(json.dumps(solution, indent=2) + "\n")
    subprocess.run(
        ["git", "-c", "user.email=t@local", "-c", "user.name=t", "commit", "-qam", "declare Triton"],
        cwd=ws,
        check=True,
        capture_output=True,
    )
    code, result, stderr = bench_cli(ws, "--seeds", "1")
    assert result["passed"] is False and result["error"]["kind"] == "static_check", (
        stderr,
        result.get("error"),
    )
    assert "[triton-impl, kernelbench]" in result["error"]["message"]
    code, result, stderr = bench_cli(ws, "--seeds", "1", "--no-static-rules")
    assert result["passed"] is False and result["error"]["kind"] == "no_kernel", (stderr, result.get("error"))
    assert untouched(ws) == ""


# -- the adapter in process -----------------------------------------------------------------


def write_problem(
    ws: Path,
    defn: dict[str, Any],
    workloads: list[dict[str, Any]],
    reference: str,
    kernel: str,
    spec: dict[str, Any] | None = None,
    bench_config: dict[str, Any] | None = None,
) -> SolExecBenchProblem:
    """A SOL workspace without git or README, loaded the way the runner loads it."""
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "definition.json").write_text(json.dumps({**defn, "reference": reference}))
    (ws / "workload.jsonl").write_text("".join(json.dumps(w) + "\n" for w in workloads))
    (ws / "reference.py").write_text(reference)
    (ws / "kernel.py").write_text(kernel)
    solution_spec = {
        "languages": ["pytorch"],
        "entry_point": "kernel.py::run",
        "destination_passing_style": True,
    }
    (ws / "solution.json").write_text(json.dumps({"name": "s", "spec": {**solution_spec, **(spec or {})}}))
    if bench_config is not None:
        (ws / "config.json").write_text(json.dumps(bench_config))
    problem = load_problem(ws / "reference.py", ws / "kernel.py", None, "kernel_fn", workspace=ws)
    assert isinstance(problem, SolExecBenchProblem)
    return problem


RMS_REFERENCE = definition()["reference"]
assert isinstance(RMS_REFERENCE, str)
DPS_TORCH = (
    "import torch\n\n"
    "def run(input, weight, eps, output, rstd):\n"
    "    x = input.float()\n"
    "    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)\n"
    "    output.copy_(x * r * weight)\n"
    "    rstd.copy_(r.squeeze(-1))\n"
)


def rms_workload(rows: int, **extra: Any) -> dict[str, Any]:
    inputs = {
        "input": {"type": "random"},
        "weight": {"type": "random"},
        "eps": {"type": "scalar", "value": 1e-6},
    }
    return {"uuid": f"u{rows}", "axes": {"num_rows": rows}, "inputs": inputs, **extra}


def test_inputs_follow_the_definition_and_the_seed(tmp_path: Path) -> None:
    problem = write_problem(tmp_path / "a", definition(), [rms_workload(3)], RMS_REFERENCE, DPS_TORCH)
    (config,) = problem.configs(interpreter=False)
    assert config["name"] == "u3 num_rows=3" and config["uuid"] == "u3" and config["axes"] == {"num_rows": 3}
    x, weight, eps = problem.make_inputs(config, 0, "cpu")
    assert x.shape == (3, HIDDEN_SIZE) and weight.shape == (HIDDEN_SIZE,) and x.dtype == torch.float32
    assert eps == 1e-6  # the scalar's literal value
    again = problem.make_inputs(config, 0, "cpu")
    other = problem.make_inputs(config, 1, "cpu")
    assert torch.equal(again[0], x) and not torch.equal(other[0], x)
    # the seed comes from config.json (upstream's default 200 when it has none)
    reseeded = write_problem(
        tmp_path / "b", definition(), [rms_workload(3)], RMS_REFERENCE, DPS_TORCH, bench_config={"seed": 7}
    )
    assert problem.base_seed == 200 and reseeded.base_seed == 7
    assert not torch.equal(reseeded.make_inputs(reseeded.configs(False)[0], 0, "cpu")[0], x)
    assert problem.bytes_moved(config) == 4 * (2 * 3 * HIDDEN_SIZE + HIDDEN_SIZE + 3)


def test_destination_passing_outputs_fresh_for_checks_reused_for_timing(tmp_path: Path) -> None:
    problem = write_problem(tmp_path, definition(), [rms_workload(4)], RMS_REFERENCE, DPS_TORCH)
    (config,) = problem.configs(interpreter=False)
    candidate = problem.candidate(config)
    inputs = problem.make_inputs(config, 0, "cpu")
    output, rstd = candidate(*inputs)
    reference = problem.reference(config, problem.make_inputs(config, 0, "cpu"))
    assert torch.allclose(output, reference[0]) and torch.allclose(rstd, reference[1])
    repeat = candidate(*inputs)  # the same input objects: a timing call, outputs reused
    assert repeat[0] is output
    fresh = candidate(*problem.make_inputs(config, 0, "cpu"))  # new inputs: new zeroed outputs
    assert fresh[0] is not output


def test_value_returning_solution(tmp_path: Path) -> None:
    kernel = RMS_REFERENCE + "\n\ndef solve(input, weight, eps):\n    out, rstd = run(input, weight, eps)\n"
    kernel += "    return {'rstd': rstd, 'output': out}\n"
    spec = {"entry_point": "kernel.py::solve", "destination_passing_style": False}
    problem = write_problem(tmp_path, definition(), [rms_workload(2)], RMS_REFERENCE, kernel, spec)
    (config,) = problem.configs(interpreter=False)
    outputs = problem.candidate(config)(*problem.make_inputs(config, 0, "cpu"))
    assert [tuple(o.shape) for o in outputs] == [(2, HIDDEN_SIZE), (2,)]  # dict put in output order


def test_entry_point_rules(tmp_path: Path) -> None:
    with pytest.raises(ProblemError, match="imports Python entry points only"):
        write_problem(
            tmp_path / "cuda", definition(), [rms_workload(2)], RMS_REFERENCE, DPS_TORCH,
            {"languages": ["cuda_cpp"], "entry_point": "kernel.cu::run"},
        )  # fmt: skip
    with pytest.raises(ProblemError, match="no entry point solve"):
        write_problem(tmp_path / "missing", definition(), [rms_workload(2)], RMS_REFERENCE, DPS_TORCH,
                      {"entry_point": "kernel.py::solve"})  # fmt: skip
    with pytest.raises(ProblemError, match="no value for var axis num_rows"):
        write_problem(tmp_path / "axes", definition(), [{"uuid": "u", "axes": {}, "inputs": {}}],
                      RMS_REFERENCE, DPS_TORCH)  # fmt: skip


def test_bad_workload_axes_are_a_setup_error(tmp_path: Path) -> None:
    bad = rms_workload(2)
    bad["axes"] = {"num_rows": "8"}
    with pytest.raises(ProblemError, match="non-negative integers"):
        write_problem(tmp_path, definition(), [bad], RMS_REFERENCE, DPS_TORCH)


def test_expr_axes_and_interpreter_shrinking(tmp_path: Path) -> None:
    assert evaluate_axis_expression("batch * (seq_len + 1) // 2", {"batch": 4, "seq_len": 7}) == 16
    with pytest.raises(ProblemError, match="not arithmetic"):
        evaluate_axis_expression("__import__('os').getpid()", {})
    defn: dict[str, Any] = {
        "name": "flatten",
        "axes": {
            "batch": {"type": "var"},
            "seq_len": {"type": "var"},
            "len_indptr": {"type": "var"},
            "hidden": {"type": "const", "value": 64},
            "tokens": {"type": "expr", "expression": "batch * seq_len"},
        },
        "constraints": ["len_indptr == batch + 1"],
        "inputs": {"x": {"shape": ["tokens", "hidden"], "dtype": "float32"},
                   "indptr": {"shape": ["len_indptr"], "dtype": "int32"}},
        "outputs": {"y": {"shape": ["tokens", "2"], "dtype": "float32"}},
    }  # fmt: skip
    reference = "def run(x, indptr):\n    return x[:, :2].clone()\n"
    kernel = "def run(x, indptr, y):\n    y.copy_(x[:, :2])\n"
    workload = {"uuid": "big", "axes": {"batch": 9, "seq_len": 4096, "len_indptr": 10},
                "inputs": {"x": {"type": "random"}, "indptr": {"type": "random"}}}  # fmt: skip
    problem = write_problem(tmp_path, defn, [workload], reference, kernel)
    (full,) = problem.configs(interpreter=False)
    assert "shrunk_for_interpreter" not in full and problem.axes(full)["tokens"] == 9 * 4096
    (small,) = problem.configs(interpreter=True)
    shrunk = small["shrunk_for_interpreter"]
    # `batch` is tied to len_indptr by a constraint: left alone, as is the const axis
    assert set(shrunk) == {"seq_len"} and shrunk["seq_len"][0] == 4096
    axes = problem.axes(small)
    assert axes["hidden"] == 64 and axes["batch"] == 9 and axes["tokens"] == 9 * axes["seq_len"]
    assert axes["tokens"] * (64 + 2) + 10 <= INTERPRETER_ELEMENT_CAP
    x, indptr = problem.make_inputs(small, 0, "cpu")
    assert x.shape == (axes["tokens"], 64) and indptr.dtype == torch.int32
    assert int(indptr.min()) >= -1024 and int(indptr.max()) < 1024  # upstream's integer range
    out = problem.candidate(small)(x, indptr)
    assert out[0].shape == (axes["tokens"], 2)  # "2": a literal dimension in a shape
    assert shrink_for_interpreter(problem.definition, {"batch": 1, "seq_len": 1, "len_indptr": 2}) == {
        "batch": 1, "seq_len": 1, "len_indptr": 2,
    }  # fmt: skip


def test_custom_inputs_come_from_the_reference_generator(tmp_path: Path) -> None:
    defn: dict[str, Any] = {
        "name": "gather",
        "axes": {"T": {"type": "var"}, "E": {"type": "const", "value": 8}},
        "custom_inputs_entrypoint": "generate_inputs",
        "inputs": {
            "table": {"shape": ["E", "4"], "dtype": "float32"},
            "index": {"shape": ["T"], "dtype": "int64"},
        },
        "outputs": {"out": {"shape": ["T", "4"], "dtype": "float32"}},
    }
    reference = (
        "import torch\n\n"
        "def generate_inputs(axes_and_scalars, device):\n"
        "    T, E = axes_and_scalars['T'], axes_and_scalars['E']\n"
        "    return {'table': torch.randn(E, 4, device=device),\n"
        "            'index': torch.randint(0, E, (T,), device=device)}\n\n"
        "def run(table, index):\n    return table[index]\n"
    )
    kernel = "def run(table, index, out):\n    out.copy_(table[index])\n"
    workload = {
        "uuid": "c",
        "axes": {"T": 5},
        "inputs": {"table": {"type": "custom"}, "index": {"type": "custom"}},
    }
    problem = write_problem(tmp_path, defn, [workload], reference, kernel)
    (config,) = problem.configs(interpreter=False)
    table, index = problem.make_inputs(config, 0, "cpu")
    assert table.shape == (8, 4) and index.shape == (5,) and int(index.max()) < 8  # valid indices
    assert torch.equal(
        problem.candidate(config)(table, index)[0], problem.reference(config, (table, index))[0]
    )


def test_upstream_name_heuristics_shape_random_inputs(tmp_path: Path) -> None:
    defn: dict[str, Any] = {
        "name": "heuristics",
        "axes": {"n": {"type": "var"}},
        "inputs": {
            "input_layernorm_weight": {"shape": ["n"], "dtype": "float32"},
            "up_proj": {"shape": ["n", "n"], "dtype": "float32"},
            "A_log": {"shape": ["n"], "dtype": "float32"},
            "rstd": {"shape": ["n"], "dtype": "float32"},
            "scale": {"shape": None, "dtype": "float32"},
        },
        "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
    }
    reference = "def run(input_layernorm_weight, up_proj, A_log, rstd, scale):\n    return rstd * scale\n"
    kernel = "def run(input_layernorm_weight, up_proj, A_log, rstd, scale, y):\n    y.copy_(rstd * scale)\n"
    inputs = {name: {"type": "random"} for name in defn["inputs"]}
    problem = write_problem(
        tmp_path, defn, [{"uuid": "h", "axes": {"n": 512}, "inputs": inputs}], reference, kernel
    )
    norm, proj, a_log, rstd, scale = problem.make_inputs(problem.configs(False)[0], 0, "cpu")
    assert torch.equal(norm, torch.ones(512))  # a norm's weight starts at one
    assert 0.02 < float(proj.std()) < 0.06  # randn / sqrt(fan_in)
    assert float(a_log.min()) >= -5.0 and float(a_log.max()) <= -1.0
    assert float(rstd.min()) >= 0.1  # |randn| + 0.1
    assert isinstance(scale, float)  # shape null: a Python scalar


def test_layout_detection_needs_both_ground_truth_files(tmp_path: Path) -> None:
    ws = tmp_path / "native"
    ws.mkdir()
    (ws / "definition.json").write_text(json.dumps(definition()))
    (ws / "reference.py").write_text("CONFIGS = [{'name': 'a'}]\ndef make_inputs(c, s, d):\n    return (1,)\n"
                                     "def reference(x):\n    return x\n")  # fmt: skip
    (ws / "kernel.py").write_text("def kernel_fn(x):\n    return x\n")
    problem = load_problem(ws / "reference.py", ws / "kernel.py", None, "kernel_fn", workspace=ws)
    assert problem.kind == "native"  # no workload.jsonl: not a SOL workspace
    assert problem.correctness_trials == 3  # a native workspace keeps kernelscope's own count


def test_correctness_rounds_are_upstream_s(tmp_path: Path) -> None:
    """eval_driver.py checks every workload on 10 rounds of fresh inputs ("Correctness checking
    (10 rounds with fresh inputs)"): without --seeds the gate draws 10 input sets too, seeded
    from config.json's seed (upstream draws them from one stream, so not the same values)."""
    ws = make_sol_workspace(tmp_path / "kernel_opt_rmsnorm")
    problem = load_problem(ws / "reference.py", ws / "kernel.py", None, "kernel_fn", workspace=ws)
    assert isinstance(problem, SolExecBenchProblem)
    assert problem.correctness_trials == 10 and problem.correctness_seeds(10) == list(range(10))
    config = problem.configs(interpreter=True)[0]
    draws = [problem.make_inputs(config, seed, "cpu")[0] for seed in problem.correctness_seeds(10)]
    assert len({float(x.flatten()[0]) for x in draws}) == 10  # ten different input sets


def test_value_returning_outputs_move_to_the_device_as_upstream() -> None:
    """Upstream's io.normalize_outputs moves a returned tensor to the evaluation device
    (`v.to(device)`) and judges its values; a CPU tensor from a value-returning `run` on a GPU
    is no `cheat`. Shown with the meta device standing in for the GPU."""
    from kernelscope.kernels.adapters.sol_execbench import _as_outputs, _Definition

    defn = _Definition(definition(), Path("definition.json"))
    on_cpu = (torch.ones(2, HIDDEN_SIZE), torch.ones(2))
    for returned in (on_cpu, {"output": on_cpu[0], "rstd": on_cpu[1]}):
        outputs = _as_outputs(returned, defn, "meta", "the candidate")
        assert [o.device.type for o in outputs] == ["meta", "meta"]
