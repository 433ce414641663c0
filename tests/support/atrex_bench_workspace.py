"""Builds a native Atrex-Bench workspace the way atrex-kernel-agent v0.3 lays one out.

Two layouts (atrex's `orchestrator/operator_layout.py`):

- legacy / leaderboard: the operator's `reference.py` (`class Model`, no `get_inputs`),
  `input.py` (`_make_inputs(**input_kwargs)`, `get_inputs`, `get_init_inputs`), `shapes.json`
  (an object keyed by shape id, each `{init_kwargs, input_kwargs}`), `metadata.json` (per shape
  `production_performance.performance_us`), `roofline.json` and `valid.py`;
- generalized / production: `reference.py`, `input.py` and `agent_problem.json` only; the
  exact cases stay in atrex's sandbox.

Then `kernel.py` (V0 is `reference.py` byte for byte), `README.md` with the campaign's
sections, `test_kernel.py`, `profile_driver.py`, `memory/`, `plans/`, `profiles/`, the
`atrex-bench/` runtime (`scripts/run_eval.py` plus `src/atrex_bench/`, as atrex copies them
from the Atrex-Bench checkout) and a `.gitignore` that ignores `/atrex-bench` as atrex's
`link_runtime` writes it, in one git commit.

`test_kernel.py` and the runtime are stand-ins with upstream's contract (atrex's
`reference/atrex_bench_test_kernel.py` and Atrex-Bench's `run_eval`): the adapter exits early
without the runtime ("official Atrex-Bench runtime is missing"), runs `run_eval.py` from the
runtime folder, and prints `[test_kernel] RESULT_JSON={...}` with `failures` read
`sid=<id>: <stage> <reason>`, latencies keyed by shape id, and the speedups against
`metadata.json`; in a generalized workspace every failure is one masked line.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-06) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt((xf * xf).sum(dim=-1, keepdim=True) + self.eps)).to(x.dtype)
"""
# a candidate that is wrong on every shape (its output scaled by 1.5)
WRONG_KERNEL = REFERENCE.replace(").to(x.dtype)", ").to(x.dtype) * 1.5")

INPUT = """import torch


def _make_inputs(num_tokens: int, hidden_size: int) -> dict[str, torch.Tensor]:
    return {"x": torch.randn(num_tokens, hidden_size)}


def get_inputs() -> list[torch.Tensor]:
    return list(_make_inputs(num_tokens=8, hidden_size=64).values())


def get_init_inputs() -> dict[str, object]:
    return {"hidden_size": 64}
"""
TOKENS = (1, 8, 32)
SHAPES = {
    str(i): {"init_kwargs": {"hidden_size": 64}, "input_kwargs": {"num_tokens": n, "hidden_size": 64}}
    for i, n in enumerate(TOKENS)
}
METADATA = {
    "id": "atrex_015",
    "status": "trace_reference",
    "dtype": "fp32",
    "shapes": {
        sid: {
            "description": f"L2 norm tokens={TOKENS[i]} hidden=64",
            "production_performance": {"framework": "rtp", "performance_us": 7.5 + i},
        }
        for i, sid in enumerate(SHAPES)
    },
}
ROOFLINE = {
    "shapes": {sid: {"semantic_Q_read_bytes": 256 * n} for sid, n in zip(SHAPES, TOKENS, strict=True)}
}
AGENT_PROBLEM = {
    "schema_version": "atrex.agent_problem.v1",
    "objective": "optimize l2 norm while exact evaluator cases remain hidden",
    "evaluation": {"exact_cases": "private", "development_cases_are_evaluation_cases": False},
    "operator_contract": {"inputs": {"x": "float32 [num_tokens, hidden_size]"}},
    "shape_domain": {"num_tokens": {"min": 1, "max": 64}, "hidden_size": [64]},
    "invariants": ["output = x / sqrt(sum(x^2) + eps) per row"],
    "coverage_regimes": [{"name": "decode", "num_tokens": "1-8"}],
}

# atrex-bench/src/atrex_bench: the package run_eval imports (the comparison lives there)
PACKAGE = """def close(got, want, atol, rtol):
    return bool(((got - want).abs() <= atol + rtol * want.abs()).all())
"""
RUN_EVAL = '''"""Stand-in for Atrex-Bench's scripts/run_eval.py: writes <output>/run/eval_result.json."""
import argparse
import importlib.util
import json
import time
from pathlib import Path

import torch
from atrex_bench import close


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


parser = argparse.ArgumentParser()
parser.add_argument("--input")
parser.add_argument("--reference-dir")
parser.add_argument("--output")
args, _ = parser.parse_known_args()
ref_dir = Path(args.reference_dir)
reference, inputs = load(ref_dir / "reference.py", "ref"), load(ref_dir / "input.py", "inp")
candidate = load(Path(args.input), "cand")
shapes = json.loads((ref_dir / "shapes.json").read_text())
result = {"eval_id": "stub", "error": None, "passed": {"compile": {"status": "passed"}, "correctness": {}},
          "correctness": {"shapes": {}}, "performance": {"shapes": {}}}
for sid, shape in shapes.items():
    torch.manual_seed(0)
    x = inputs._make_inputs(**shape["input_kwargs"])
    want = reference.Model(**shape["init_kwargs"])(*x.values())
    model = candidate.Model(**shape["init_kwargs"])
    got = model(*x.values())
    ok = close(got, want, 1e-2, 5e-2)
    result["passed"]["correctness"][sid] = {"status": "passed" if ok else "failed",
                                            "reason": None if ok else "mismatch"}
    diff = float((got - want).abs().max())
    result["correctness"]["shapes"][sid] = {"cases": [{"outputs": [{"max_elementwise_abs_diff": diff}]}]}
    samples = []
    for _ in range(3):
        start = time.perf_counter()
        model(*x.values())
        samples.append({"end_to_end_time_ms": max((time.perf_counter() - start) * 1e3, 1e-6)})
    result["performance"]["shapes"][sid] = {"error": None, "samples": samples}
Path("last_eval.txt").write_text("the evaluator writes into its working folder\\n")  # cwd: the runtime
out = Path(args.output) / "run"
out.mkdir(parents=True, exist_ok=True)
(out / "eval_result.json").write_text(json.dumps(result))
'''
TEST_KERNEL = '''#!/usr/bin/env python3
"""Stand-in for atrex's reference/atrex_bench_test_kernel.py (same contract)."""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PREFIX = "[test_kernel] RESULT_JSON="
parser = argparse.ArgumentParser()
parser.add_argument("--version", default="v0")
parser.add_argument("--no-memory", action="store_true")
parser.parse_args()
ws = Path(__file__).resolve().parent
runtime = ws / "atrex-bench"
evaluator = runtime / "scripts" / "run_eval.py"
if not evaluator.is_file() or not (runtime / "src" / "atrex_bench").is_dir():
    raise SystemExit(f"official Atrex-Bench runtime is missing; expected {evaluator} and {runtime / 'src' / 'atrex_bench'}")
shape_ids = sorted(json.loads((ws / "shapes.json").read_text()), key=int)
env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(runtime / "src"), os.environ.get("PYTHONPATH")]))}
with tempfile.TemporaryDirectory() as tmp:
    done = subprocess.run([sys.executable, str(evaluator), "--input", str(ws / "kernel.py"), "--reference-dir",
                           str(ws), "--output", tmp], cwd=runtime, env=env, capture_output=True, text=True)
    print(done.stdout, end="")
    print(done.stderr, end="", file=sys.stderr)
    found = sorted(Path(tmp).rglob("eval_result.json"))
    payload = json.loads(found[-1].read_text()) if found else {}
failures, latency, max_abs = [], {}, 0.0
for sid in shape_ids:
    status = payload.get("passed", {}).get("correctness", {}).get(sid, {})
    if status.get("status") != "passed":
        failures.append(f"sid={sid}: correctness " + str(status.get("reason") or status.get("status") or "missing"))
    for case in payload.get("correctness", {}).get("shapes", {}).get(sid, {}).get("cases", []):
        for output in case["outputs"]:
            max_abs = max(max_abs, output["max_elementwise_abs_diff"])
    samples = [s["end_to_end_time_ms"] for s in payload.get("performance", {}).get("shapes", {}).get(sid, {}).get("samples", [])]
    if samples:
        latency[sid] = statistics.median(samples) * 1000.0
    else:
        failures.append(f"sid={sid}: performance has no valid samples")
metadata = json.loads((ws / "metadata.json").read_text()) if (ws / "metadata.json").is_file() else None
complete = len(latency) == len(shape_ids)
speedups = [metadata["shapes"][sid]["production_performance"]["performance_us"] / latency[sid]
            for sid in shape_ids] if metadata and complete else []
mean = sum(speedups) / len(speedups) if speedups else None
result = {"all_pass": not failures, "numerical_metrics": {}, "failures": failures,
          "latency_us_geomean": math.exp(sum(map(math.log, latency.values())) / len(latency)) if complete else 0.0,
          "latency_us_arith_mean": sum(latency.values()) / len(latency) if complete else 0.0,
          "latency_us_by_shape": latency, "speedup_vs_ref_mean": mean, "speedup_vs_ref_geomean": None,
          "performance_score": mean, "performance_objective": "shape_speedup_arithmetic_mean",
          "max_abs_err": max_abs, "max_rel_err": 0.0, "evaluator": "atrex-bench/run_eval",
          "eval_id": payload.get("eval_id")}
if (ws / "agent_problem.json").is_file():
    if result["failures"]:
        result["failures"] = ["one or more hidden evaluator cases failed; reproduce within the public shape_domain"]
    result["hidden_case_details"] = "shape inputs and failure details withheld"
print(PREFIX + json.dumps(result), flush=True)
sys.exit(0 if result["all_pass"] else 1)
'''
README = """# kernel_opt_l2_norm_triton

Profile-driven optimization of one native Atrex-Bench operator.

## Goal

Minimize the full-workload geomean latency while every evaluator case remains correct.

## Campaign

- Target platform: `B200`
- Runtime architecture: `sm_100`
- Optimization mode: `{mode}`
- Target framework: `Triton`
- Target utilization stop condition: `90%`

## Contract and evaluator

- `test_kernel.py` is the immutable supervisor-installed adapter to the official
  `atrex-bench/scripts/run_eval.py`.

## Stop conditions

The supervisor stops at the configured iteration/token/stall limits.
"""
# as atrex's link_runtime writes it (the orchestrator's runtime symlinks and the copied runtime)
GITIGNORE = """__pycache__/
*.pyc

# orchestrator runtime symlinks (not part of the workspace)
/tools
/reference
/skills
/reference-projects
/gpu-wiki
/.claude
/.qoder
/.agents
/atrex-bench

# orchestrator live stall counter (rebuilt on restart; never committed)
/.orchestrator_state.json
"""


def _write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_atrex_bench_workspace(parent: Path, generalized: bool = False, kernel: str = REFERENCE) -> Path:
    """A committed native Atrex-Bench workspace under `parent` (module docstring); `kernel`
    is kernel.py's text (default V0: the reference, byte for byte)."""
    ws = parent / ("kernel_opt_l2_norm_triton_gen" if generalized else "kernel_opt_l2_norm_triton")
    ws.mkdir(parents=True)
    files = {
        "README.md": README.format(mode="production" if generalized else "leaderboard"),
        "CLAUDE.md": "# Agent constraints\n",
        "reference.py": REFERENCE,
        "input.py": INPUT,
        "kernel.py": kernel,
        "profile_driver.py": "# immutable profiling entry\n",
        "test_kernel.py": TEST_KERNEL,
        ".gitignore": GITIGNORE,
        "plans/.keep": "",
        "profiles/.keep": "",
        "memory/.keep": "",
        # the runtime atrex copies from the Atrex-Bench checkout (gitignored)
        "atrex-bench/scripts/run_eval.py": RUN_EVAL,
        "atrex-bench/src/atrex_bench/__init__.py": PACKAGE,
        # what a checkout holds beside it, which the evaluator does not need
        "atrex-bench/data/private_cases.json": "{}\n",
    }
    if generalized:
        files["agent_problem.json"] = json.dumps(AGENT_PROBLEM, indent=2)
    else:
        files["shapes.json"] = json.dumps(SHAPES, indent=2)
        files["metadata.json"] = json.dumps(METADATA, indent=2)
        files["roofline.json"] = json.dumps(ROOFLINE, indent=2)
        files["valid.py"] = "# the operator's own validity checks\n"
    for name, text in files.items():
        _write(ws, name, text)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "atrex@example.com")
    git("config", "user.name", "atrex")
    git("add", "-A")
    git("commit", "-qm", "V0: baseline kernel")
    return ws
