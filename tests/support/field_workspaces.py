"""Faithful fixtures of the optimization workspaces atrex-kernel-agent writes today.

Everything here reproduces the *output* of upstream code at
``alibaba/atrex-kernel-agent@16f7ec4f6d6e51fe62f2c323ddb6ab73c25279d3`` (HEAD, 2026-08-21):
field names, nesting, value types, key order, file locations, commit messages and ignore rules
are the ones that code writes. No upstream code is copied; each builder's docstring cites the
upstream file and function whose output it reproduces.

The campaign modelled is the default SOL-ExecBench leaderboard run

    python orchestrator/optimize.py --op-dir .../rmsnorm_h512 --platform B200 \
        --framework Triton --fast-episodes 1

which lives in ``kernel_opt_rmsnorm_h512_triton_b200/`` (see ``WORKSPACE_NAME``):

* V0: ``reference/sol_seed.py`` seeds the workspace and commits the sources
  (``V0: baseline (SOL reference wrapper)``); the supervisor
  (``orchestrator/campaign.py`` ``Campaign._setup_baseline_sol``) measures it and commits
  ``memory/v0.json`` + ``baseline_report.md`` (``V0: record baseline measurement``).
  Leaderboard mode with ``--framework-baseline auto`` skips the V1 framework-baseline stage.
* episode 1 (fast mode, 5 trials) -> v1, promoted (squash commit
  ``episode 1: promote verified long-horizon candidate``);
* episode 2 (full mode, ABBA-verified) -> v2, promoted;
* episode 3 (full mode) hands off ``pivot`` -> v3 recorded without changing the kernel
  (``v3: long-horizon episode 3 pivot``), performance carried from v2;
* episode 4 (full mode) is running when ``live=True``: it owns memory version 4, a registered
  git worktree on branch ``atrex/long-e0004-...`` and ``memory/live.json`` mirrors its journal.

``build_atrex_sol_workspace(objective=MEAN_SPEEDUP_OBJECTIVE)`` writes the same campaign as
atrex v0.3.0 scores it (a performance objective and score in every result and record; see
that builder). The memory numbers are plausible B200 figures, not measurements; the kernels are real Triton and
run in the CPU interpreter (``TRITON_INTERPRET=1``) through the workspace's ``test_kernel.py``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

UPSTREAM_REPO = "alibaba/atrex-kernel-agent"
UPSTREAM_COMMIT = "16f7ec4f6d6e51fe62f2c323ddb6ab73c25279d3"

OP_NAME = "rmsnorm_h512"
PLATFORM = "B200"
FRAMEWORK = "Triton"
OPTIMIZATION_MODE = "leaderboard"
AGENT_CLI = "claude"
# orchestrator/hardware.py framework_workspace_suffix(): "<framework>_<platform>" slugs.
CAMPAIGN_NAME = f"{OP_NAME}_triton_b200"
WORKSPACE_NAME = f"kernel_opt_{CAMPAIGN_NAME}"
RESULT_PREFIX = "[test_kernel] RESULT_JSON="  # orchestrator/constants.py TEST_RESULT_PREFIX
RESULT_KEYS = frozenset(
    {
        "total",
        "passed",
        "all_pass",
        "failures",
        "latency_us_by_shape",
        "latency_us_geomean",
        "latency_us_arith_mean",
        "speedup_vs_ref_geomean",
        "max_abs_err",
        "max_rel_err",
    }
)
# What a v0.3.0 evaluator adds to RESULT_JSON (Atrex-Bench's test_kernel ``result_from_eval``,
# index id 68528712763): its objective, the score by it, and the mean per-shape speedup;
# ``speedup_vs_ref_geomean`` is then null.
OBJECTIVE_RESULT_KEYS = frozenset({"performance_objective", "performance_score", "speedup_vs_ref_mean"})
MEAN_SPEEDUP_OBJECTIVE = "shape_speedup_arithmetic_mean"
HIDDEN_SIZE = 512
EPS = 1e-6
# (workload uuid, batch_size): three workloads, keyed by uuid in latency_us_by_shape.
WORKLOADS: tuple[tuple[str, int], ...] = (
    ("0d3c5b8e-5f0a-4c52-9d7e-1b7f3a2c9e41", 1),
    ("6a1f2e9d-8b3c-4e7a-a5d2-3c9b0e7f1a62", 33),
    ("b94e7c20-1d6a-4f3b-8e25-7a0c4d9f6b13", 128),
)
WORKLOAD_IDS = tuple(uuid for uuid, _ in WORKLOADS)

RUNTIME_DIR = ".atrex_long_horizon"  # long_horizon/store.py RUNTIME_DIR
VERIFY_DIR = "verification_artifacts/.atrex_long_horizon_verify"  # long_horizon/store.py
STALL_STATE_FILE = ".orchestrator_state.json"  # orchestrator/constants.py
MODE_STATE_FILE = ".orchestrator_mode.json"  # orchestrator/optimization_policy.py
LIVE_NOTE = (
    "Live optimization progress only; memory/vN.json is authoritative after "
    "the supervisor records verification or an interrupted recovery outcome."
)
POLICY_BEGIN = "<!-- ATREX_OPTIMIZATION_MODE_POLICY_BEGIN -->"
POLICY_END = "<!-- ATREX_OPTIMIZATION_MODE_POLICY_END -->"

# Commit subjects upstream writes (str.format fields). Supervisor: sol_seed.py main(),
# orchestrator/campaign.py (_finalize_v0_measurement, _setup_baseline_native,
# _commit_framework_baseline, _pin_framework_baseline), long_horizon/git_episode.py
# (promote_candidate, record_episode_outcome). Agent, on episode branches only:
# orchestrator/prompts/episode.md and fast_episode.md (checkpoint subjects are free-form).
SUPERVISOR_COMMIT_SUBJECTS = {
    "v0_source_sol": "V0: baseline (SOL reference wrapper)",
    "v0_source_native": "V0: baseline kernel",
    "v0_measurement": "V0: record baseline measurement",
    "framework_baseline": "v{version}: framework baseline ({framework}) replacing the V0 PyTorch wrapper",
    "framework_baseline_pin": "v{version}: pin framework baseline {commit8}",
    "promotion": "episode {episode}: promote verified long-horizon candidate",
    "outcome": "v{version}: long-horizon episode {episode} {status}",
}
AGENT_COMMIT_SUBJECTS = {
    "full_candidate": "v{version}: kernel candidate",
    "fast_trial": "v{version} trial {trial}: fast kernel candidate",
    "fast_selection": "v{version}: select best fast candidate",
}

_GIT_IDENTITY = ("-c", "user.name=atrex", "-c", "user.email=atrex@example.invalid")
_T0 = datetime(2026, 8, 18, 9, 0, 0, tzinfo=timezone.utc)

# Branch and worktree suffixes are uuid4().hex[:8] upstream (two separate draws per episode);
# fixed here so every build has the same commit hashes.
_EPISODE_IDS = {
    1: ("5d1c9a7e", "0b8f3e62"),
    2: ("c27e4f19", "9a40d6b3"),
    3: ("81f5b20c", "e6c39a47"),
    4: ("4ab9e013", "7d2f81c5"),
}
_SESSION_IDS = {
    1: "2f6c1e8a-94b3-4d0e-8a71-c5e29f3b7d10",
    2: "9b0d47e2-3c5f-4a18-b6e9-01d8f2a7c4e3",
    3: "e4a18c3f-7b2d-4f95-9c06-3d7e5a1b8f24",
}
_TOKENS = {1: 1_284_311, 2: 2_906_457, 3: 2_118_902}
_ABBA_ID = "3e0c6f1a9b2d4c7e8f105a6b7c8d9e0f"


def _ts(minutes: float) -> str:
    """An ISO-8601 UTC timestamp like datetime.now(timezone.utc).isoformat()."""
    moment = _T0 + timedelta(minutes=minutes)
    micro = int(hashlib.sha1(str(minutes).encode()).hexdigest()[:5], 16) % 1_000_000
    return moment.replace(microsecond=micro).isoformat()


def _dump(value: Any) -> str:
    """JSON exactly as upstream writes records: indent=2, ensure_ascii=False, trailing newline."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _write_json(path: Path, value: Any) -> None:
    _write(path, _dump(value))


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


# ───────────────────────────── ground truth and sources ─────────────────────────────

REFERENCE_PY = '''import torch


def run(hidden_states, weight):
    """RMSNorm over the last dimension, fp32."""
    x = hidden_states.to(torch.float32)
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(variance + 1e-6) * weight
'''

DESCRIPTION = (
    "Root-mean-square layer normalization over the hidden dimension (hidden_size=512) "
    "with a learned fp32 weight; eps = 1e-6."
)


def definition_json() -> dict[str, Any]:
    """SOL-ExecBench ``definition.json`` (ground truth copied verbatim by sol_seed.py)."""
    return {
        "name": OP_NAME,
        "op_type": "rmsnorm",
        "description": DESCRIPTION,
        "axes": {
            "batch_size": {"type": "var"},
            "hidden_size": {"type": "const", "value": HIDDEN_SIZE},
        },
        "inputs": {
            "hidden_states": {"shape": ["batch_size", "hidden_size"], "dtype": "float32"},
            "weight": {"shape": ["hidden_size"], "dtype": "float32"},
        },
        "outputs": {
            "output": {"shape": ["batch_size", "hidden_size"], "dtype": "float32"},
        },
        "reference": REFERENCE_PY,
        "constraints": [],
    }


def workload_lines() -> list[dict[str, Any]]:
    """SOL-ExecBench ``workload.jsonl`` rows: uuid, axes, inputs{type}, correctness tolerances."""
    return [
        {
            "uuid": uuid,
            "axes": {"batch_size": batch},
            "inputs": {"hidden_states": {"type": "random"}, "weight": {"type": "random"}},
            "correctness": {"max_atol": 1e-4, "max_rtol": 1e-4},
        }
        for uuid, batch in WORKLOADS
    ]


def readme_text() -> str:
    """README.md exactly as ``reference/sol_seed.py`` ``_readme()`` renders it.

    The supervisor (``Campaign._setup_baseline_sol``) calls sol_seed.py with ``--framework``,
    ``--platform`` and no ``--gpu-wiki``, so ``gpu_wiki_path`` is an empty code span.
    """
    return (
        f"# kernel_opt_{CAMPAIGN_NAME}\n\n"
        f"Profile-driven optimization of SOL-ExecBench op **{OP_NAME}**.\n\n"
        f"{DESCRIPTION}\n\n"
        "## Goal\n\n"
        "**Minimize the GEOMEAN of per-workload kernel latency** "
        "(`performance.latency_us` in `memory/v<N>.json`), while keeping ALL workloads "
        "correct under their own SOL tolerances. A version that passes `test_kernel.py` "
        "is directly submittable to SOL-ExecBench.\n\n"
        "## Config\n\n"
        f"- Target platform: `{PLATFORM}`\n"
        f"- Target framework: `{FRAMEWORK}` (V0 starts as PyTorch; migrate the body of `run()` "
        "in `kernel.py`)\n"
        "- gpu_wiki_path: ``\n"
        f"- Workloads (shape set): {len(WORKLOADS)} in `workload.jsonl` (ground truth — do NOT edit)\n\n"
        "## Ground truth (immutable)\n\n"
        "- `definition.json`, `reference.py`, `workload.jsonl` — copied verbatim from the op dir.\n"
        "- `test_kernel.py` — the SOL evaluator harness (immutable methodology).\n\n"
        "## Workflow\n\n"
        "- Edit `kernel.py` only (DPS `run()`; args = definition.inputs then definition.outputs).\n"
        "- When migrating framework, also update `solution.json` `spec.languages` / `dependencies`.\n"
        "- Validate + bench every iteration with `python test_kernel.py --version v<N>`.\n"
    )


# sol_seed.py GITIGNORE, then the lines orchestrator/workspace_runtime.py link_runtime() and
# orchestrator/optimization_policy.py install_workspace_policy() append at V0 (committed in
# "V0: record baseline measurement").
SEED_GITIGNORE = """__pycache__/
*.pyc
traces.jsonl
.finalize_traces.jsonl
submission.json
*.ncu-rep
profiles/*/att/*.att
profiles/*/att/*.out
profiles/*/att/*.pftrace
profiles/*/att/*.otf2
# orchestrator runtime symlinks (not part of the workspace)
/tools
/reference
/skills
/reference-projects
/gpu-wiki
"""
RUNTIME_GITIGNORE_APPEND = (
    "/.claude\n/.qoder\n/.agents\n"
    "\n# orchestrator live stall counter (rebuilt on restart; never committed)\n"
    f"/{STALL_STATE_FILE}\n"
    "\n# orchestrator optimization-mode identity (local policy state)\n"
    f"/{MODE_STATE_FILE}\n"
)
# long_horizon/store.py CampaignStore.ensure_excluded(): appended to .git/info/exclude.
INFO_EXCLUDE_RULES = (
    f"/{RUNTIME_DIR}/",
    f"/{VERIFY_DIR}/",
    f"/{STALL_STATE_FILE}",
    "/memory/live.json",
    "/plans/",
    "/profiles/",
    "/.humanize/",
)

CLAUDE_MD_SEED = """# GPU Kernel Optimizer — Agent Constraints

(kernelscope fixture stand-in for atrex's reference/CLAUDE.md, which sol_seed.py copies here.)

- Edit `kernel.py` only; `test_kernel.py`, `definition.json`, `reference.py`, `workload.jsonl`
  and `profile_driver.py` are immutable ground truth.
- The goal is the GEOMEAN of per-workload latency (`performance.latency_us`).
"""
CLAUDE_MD_POLICY = (
    f"{POLICY_BEGIN}\n\n"
    "## Optimization mode: leaderboard\n\n"
    "(stand-in text) Follow this CLAUDE.md; the requested framework is a recommended direction.\n\n"
    f"{POLICY_END}\n"
)

PROFILE_DRIVER_PY = '''"""Stand-in for atrex's immutable profile_driver.py: profilers run this file, never kernel.py."""
import json
import os

import torch

import kernel

workloads = [json.loads(line) for line in open("workload.jsonl") if line.strip()]
wl = workloads[int(os.environ.get("PROFILE_WORKLOAD_IDX", "0"))]
x = torch.randn(wl["axes"]["batch_size"], 512)
w = torch.randn(512)
out = torch.empty_like(x)
for _ in range(int(os.environ.get("PROFILE_ITERS", "1"))):
    kernel.run(x, w, out)
'''


def kernel_v0() -> str:
    """V0 kernel.py as sol_seed.py ``_render_kernel`` builds it: the reference with ``run``
    renamed ``_ref`` plus a destination-passing wrapper (inputs, then outputs)."""
    header = (
        "# V0 baseline: destination-passing-style (DPS) wrapper around the verbatim SOL\n"
        "# reference (sol_seed.py). Argument order = definition.inputs then definition.outputs.\n"
    )
    ref = REFERENCE_PY.replace("def run(", "def _ref(")
    return (
        header
        + ref
        + "\n\ndef run(hidden_states, weight, output):\n"
        + "    _out = _ref(hidden_states, weight)\n"
        + "    output[:] = _out\n"
    )


def kernel_row(
    *,
    num_warps: int,
    block_n: str = "triton.next_power_of_2(n_cols)",
    rsqrt: bool = False,
    evict_first: bool = False,
) -> str:
    """An episode-1 style kernel: one program per row, the whole row in registers."""
    norm = "tl.rsqrt(ms + eps)" if rsqrt else "1.0 / tl.sqrt(ms + eps)"
    load_hint = ', eviction_policy="evict_first"' if evict_first else ""
    return f'''"""RMSNorm, one Triton program per row (destination-passing run())."""
import torch
import triton
import triton.language as tl

EPS = 1e-6


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, out_ptr, stride_x, stride_out, n_cols, eps,
                        BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0{load_hint})
    ms = tl.sum(x * x, axis=0) / n_cols
    rstd = {norm}
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_out + cols, x * rstd * w, mask=mask)


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    n_rows, n_cols = hidden_states.shape
    _rmsnorm_row_kernel[(n_rows,)](
        hidden_states, weight, output, hidden_states.stride(0), output.stride(0), n_cols, EPS,
        BLOCK_N={block_n}, num_warps={num_warps},
    )
'''


def kernel_rows(*, block_m: int, num_warps: int, split: bool = False) -> str:
    """The episode-2+ kernel: BLOCK_M rows per program as one 2-D tile (``split`` is the slower
    two-half reduction episode 3 tried)."""
    if split:
        body = """    half: tl.constexpr = BLOCK_N // 2
    lo = tl.arange(0, half)
    x_lo = tl.load(x_ptr + rows[:, None] * stride_x + lo[None, :], mask=rmask[:, None], other=0.0)
    x_hi = tl.load(x_ptr + rows[:, None] * stride_x + half + lo[None, :], mask=rmask[:, None],
                   other=0.0)
    ms = (tl.sum(x_lo * x_lo, axis=1) + tl.sum(x_hi * x_hi, axis=1)) / n_cols
    rstd = tl.rsqrt(ms + eps)
    w_lo = tl.load(w_ptr + lo)
    w_hi = tl.load(w_ptr + half + lo)
    tl.store(out_ptr + rows[:, None] * stride_out + lo[None, :],
             x_lo * rstd[:, None] * w_lo[None, :], mask=rmask[:, None])
    tl.store(out_ptr + rows[:, None] * stride_out + half + lo[None, :],
             x_hi * rstd[:, None] * w_hi[None, :], mask=rmask[:, None])
"""
    else:
        body = """    cols = tl.arange(0, BLOCK_N)
    cmask = cols < n_cols
    mask = rmask[:, None] & cmask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    ms = tl.sum(x * x, axis=1) / n_cols
    rstd = tl.rsqrt(ms + eps)
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0)
    y = x * rstd[:, None] * w[None, :]
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], y, mask=mask)
"""
    return f'''"""RMSNorm, BLOCK_M rows per Triton program (destination-passing run())."""
import torch
import triton
import triton.language as tl

EPS = 1e-6
BLOCK_M = {block_m}


@triton.jit
def _rmsnorm_rows_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out, eps,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < n_rows
{body}

def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    n_rows, n_cols = hidden_states.shape
    grid = (triton.cdiv(n_rows, BLOCK_M),)
    _rmsnorm_rows_kernel[grid](
        hidden_states, weight, output, n_rows, n_cols, hidden_states.stride(0), output.stride(0),
        EPS, BLOCK_M=BLOCK_M, BLOCK_N=triton.next_power_of_2(n_cols), num_warps={num_warps},
    )
'''


E1_TRIAL_KERNELS = (
    kernel_row(num_warps=4),
    kernel_row(num_warps=8),
    kernel_row(num_warps=8, rsqrt=True),
    kernel_row(num_warps=8, evict_first=True),
    kernel_row(num_warps=8, block_n="256"),  # truncates the 512-wide row: fails correctness
)
E1_BEST_TRIAL = 2
KERNEL_V1 = E1_TRIAL_KERNELS[E1_BEST_TRIAL - 1]
KERNEL_E2_CHECKPOINT = kernel_rows(block_m=8, num_warps=4)
KERNEL_V2 = kernel_rows(block_m=4, num_warps=4)
KERNEL_E3_CHECKPOINT = kernel_rows(block_m=4, num_warps=4, split=True)
KERNEL_E4_WIP = kernel_rows(block_m=4, num_warps=2)  # uncommitted edit in the running worktree

SOLUTION_JSON = {
    "name": f"{CAMPAIGN_NAME}_v0_pytorch",
    "definition": OP_NAME,
    "author": "atrex-aka",
    "description": f"V0 baseline (DPS PyTorch wrapper around the reference); target framework: {FRAMEWORK}",
    "spec": {
        "languages": ["pytorch"],
        "target_hardware": ["B200", "LOCAL"],
        "entry_point": "kernel.py::run",
        "dependencies": ["torch"],
        "destination_passing_style": True,
    },
    "sources": [{"path": "kernel.py"}],
}
CONFIG_JSON = {"seed": 200, "warmup_runs": 10, "iterations": 50, "benchmark_reference": True}

TEST_KERNEL_PY = r'''#!/usr/bin/env python3
"""Offline stand-in for atrex-kernel-agent's SOL ``test_kernel.py`` (a kernelscope test fixture).

Upstream (reference/test_kernel.py) runs the ``sol-execbench`` evaluator over every workload in
``workload.jsonl``. This stand-in runs kernel.py's destination-passing ``run()`` against
reference.py's ``run()`` itself (CPU and ``TRITON_INTERPRET=1`` when there is no GPU) and prints
the same report and the same ``[test_kernel] RESULT_JSON={...}`` line, with the same keys.
Without --no-memory it merges the result into memory/v<N>.json the way upstream does.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 0.0


def _dims(definition, workload):
    dims = {}
    for axis, spec in definition["axes"].items():
        dims[axis] = spec["value"] if spec["type"] == "const" else workload["axes"][axis]
    return dims


def _tensor(spec, dims, kind, generator):
    shape = [dims[s] if isinstance(s, str) else int(s) for s in spec["shape"]]
    dtype = getattr(torch, spec["dtype"])
    if kind.get("type") == "scalar":
        return torch.tensor(kind["value"], dtype=dtype, device=DEVICE)
    return torch.randn(shape, generator=generator, dtype=dtype).to(DEVICE)


def _timed_us(fn, warmup, iterations):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(iterations):
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def evaluate(workspace: Path, seed: int, timed: bool = True) -> dict:
    definition = json.loads((workspace / "definition.json").read_text(encoding="utf-8"))
    config = json.loads((workspace / "config.json").read_text(encoding="utf-8"))
    workloads = [json.loads(line) for line in
                 (workspace / "workload.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    reference = _module(workspace / "reference.py", "sol_reference")
    kernel = _module(workspace / "kernel.py", "sol_kernel")
    warmup, iterations = int(config.get("warmup_runs", 10)), int(config.get("iterations", 50))
    if os.environ.get("TRITON_INTERPRET") == "1":
        warmup, iterations = min(warmup, 1), min(iterations, 3)
    by_shape, speedups, failures = {}, [], []
    max_abs = max_rel = 0.0
    for index, workload in enumerate(workloads):
        generator = torch.Generator().manual_seed(seed + index)
        dims = _dims(definition, workload)
        inputs = [_tensor(spec, dims, workload["inputs"].get(name, {}), generator)
                  for name, spec in definition["inputs"].items()]
        outputs = [torch.empty([dims[s] if isinstance(s, str) else int(s) for s in spec["shape"]],
                               dtype=getattr(torch, spec["dtype"]), device=DEVICE)
                   for spec in definition["outputs"].values()]
        uuid = workload["uuid"]
        try:
            expected = reference.run(*inputs)
            expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
            kernel.run(*inputs, *outputs)
        except Exception as exc:  # the evaluator reports, it does not crash
            failures.append(f"{uuid[:8]}=RUNTIME_ERROR ({workload.get('axes')}): {type(exc).__name__}")
            continue
        tol = workload.get("correctness") or {}
        atol, rtol = float(tol.get("max_atol", 1e-5)), float(tol.get("max_rtol", 1e-5))
        ok = True
        for got, want in zip(outputs, expected):
            diff = (got.float() - want.float()).abs()
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / want.float().abs().clamp_min(1e-6)).max()))
            ok = ok and bool(torch.isfinite(got).all()) and bool((diff <= atol + rtol * want.abs()).all())
        if not ok:
            failures.append(f"{uuid[:8]}=INCORRECT_NUMERICAL ({workload.get('axes')})")
            continue
        if timed:
            kernel_us = _timed_us(lambda: kernel.run(*inputs, *outputs), warmup, iterations)
            by_shape[uuid] = kernel_us
            if config.get("benchmark_reference", True):
                ref_us = _timed_us(lambda: reference.run(*inputs), warmup, iterations)
                speedups.append(ref_us / kernel_us)
    total = len(workloads)
    latencies = list(by_shape.values())
    return {
        "total": total,
        "passed": total - len(failures),
        "all_pass": total > 0 and not failures,
        "failures": failures,
        "latency_us_by_shape": by_shape,
        "latency_us_geomean": _geomean(latencies),
        "latency_us_arith_mean": sum(latencies) / len(latencies) if latencies else 0.0,
        "speedup_vs_ref_geomean": _geomean(speedups),
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
    }


def _latest_version(workspace: Path) -> str:
    numbers = [int(m.group(1)) for p in (workspace / "memory").glob("v*.json")
               if (m := re.match(r"^v(\d+)\.json$", p.name))]
    return f"v{max(numbers, default=0)}"


def _record(workspace: Path, version: str, s: dict) -> Path:
    path = workspace / "memory" / f"{version}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    record.setdefault("version", version)
    record.setdefault("masked", False)
    record["timestamp"] = datetime.now(timezone.utc).isoformat()
    perf = record.setdefault("performance", {})
    perf["latency_us"] = s["latency_us_geomean"]
    perf["latency_us_geomean"] = s["latency_us_geomean"]
    perf["latency_us_arith_mean"] = s["latency_us_arith_mean"]
    perf["latency_us_by_shape"] = s["latency_us_by_shape"]
    perf["speedup_vs_ref_geomean"] = s["speedup_vs_ref_geomean"]
    corr = record.setdefault("correctness", {})
    corr["status"] = "PASS" if s["all_pass"] else "FAIL"
    corr["max_abs_err"], corr["max_rel_err"] = s["max_abs_err"], s["max_rel_err"]
    gate = record.setdefault("quality_gate", {})
    gate["result"] = "PASS" if s["all_pass"] else "FAIL"
    gate["failure_reason"] = None if s["all_pass"] else "; ".join(s["failures"])[:2000]
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Offline SOL correctness+bench stand-in.")
    parser.add_argument("--workspace", default=".")
    parser.add_argument("--version", default=None)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--multi-seed", type=int, default=0, metavar="N")
    args = parser.parse_args(argv)
    workspace = Path(args.workspace).resolve()
    if not (workspace / "solution.json").exists():
        raise SystemExit(f"[test_kernel] no solution.json in {workspace}")
    config = json.loads((workspace / "config.json").read_text(encoding="utf-8"))
    seed = args.seed if args.seed is not None else int(config.get("seed", 0))
    print(f"[test_kernel] offline stand-in: kernel.py vs reference.py on {DEVICE}"
          f" (TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET', '0')})", flush=True)
    s = evaluate(workspace, seed)
    print("\n[test_kernel] ── SOL-ExecBench result ─────────────────────────────")
    print(f"  workloads PASSED         : {s['passed']}/{s['total']}")
    print(f"  GEOMEAN kernel latency   : {s['latency_us_geomean']:.1f} us   <-- OPTIMIZATION GOAL (minimize)")
    print(f"  arith-mean kernel latency: {s['latency_us_arith_mean']:.1f} us")
    print(f"  geomean speedup vs ref   : {s['speedup_vs_ref_geomean']:.3f}x")
    print(f"  worst abs / rel error    : {s['max_abs_err']:.2e} / {s['max_rel_err']:.2e}")
    if s["failures"]:
        print(f"  FAILURES                 : {'; '.join(s['failures'])}")
    print("  ────────────────────────────────────────────────────────────────")
    for n in range(1, args.multi_seed + 1):
        extra = evaluate(workspace, n * 1000 + 42, timed=False)
        print(f"  seed {n}: {extra['passed']}/{extra['total']} passed")
        if not extra["all_pass"]:
            s["all_pass"] = False
            s["failures"].append(f"seed{n}: " + "; ".join(extra["failures"]))
        s["max_abs_err"] = max(s["max_abs_err"], extra["max_abs_err"])
        s["max_rel_err"] = max(s["max_rel_err"], extra["max_rel_err"])
    print("[test_kernel] RESULT_JSON=" + json.dumps(s, ensure_ascii=False, sort_keys=True))
    if not args.no_memory:
        print(f"[test_kernel] recorded -> {_record(workspace, args.version or _latest_version(workspace), s)}")
    if s["all_pass"]:
        solution = json.loads((workspace / "solution.json").read_text(encoding="utf-8"))
        for source in solution.get("sources", []):
            source["content"] = (workspace / source["path"]).read_text(encoding="utf-8")
        (workspace / "submission.json").write_text(
            json.dumps(solution, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0 if s["all_pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
'''


# ───────────────────────────── measurements (plausible B200 figures) ─────────────────────────────

_REF_US = (8.52, 9.31, 12.04)  # the PyTorch reference, measured alongside by sol-execbench
_V0_US = (8.47, 9.28, 11.96)
_E1_TRIAL_US: tuple[tuple[float, float, float] | None, ...] = (
    (3.61, 3.66, 4.38),
    (3.12, 3.19, 3.71),
    (3.15, 3.22, 3.69),
    (3.30, 3.41, 3.95),
    None,  # trial 5 fails correctness
)
_E2_ABBA_US = {  # schedule for --verify-repeats 2: incumbent r0, candidate r0, candidate r1, incumbent r1
    ("incumbent", 0): (3.14, 3.20, 3.73),
    ("candidate", 0): (2.71, 2.76, 3.02),
    ("candidate", 1): (2.69, 2.78, 3.04),
    ("incumbent", 1): (3.11, 3.21, 3.70),
}
_E3_CHECKPOINT_US = (2.88, 2.93, 3.10)
# The v0.3.0 campaign's episode 2 (``objective=``): a candidate much faster at batch_size=1 and
# slower on the two larger workloads. Its mean per-shape speedup beats v1's (3.81 vs 2.96), so
# atrex v0.3 promotes it; its geomean latency is worse (3.50 vs 3.33 us), so the geomean
# order (atrex v0.2's, and kernelscope's latency ratio) would keep v1.
_E2_ABBA_US_BY_OBJECTIVE = {
    ("incumbent", 0): (3.14, 3.20, 3.73),
    ("candidate", 0): (1.04, 5.95, 6.85),
    ("candidate", 1): (1.06, 6.05, 6.75),
    ("incumbent", 1): (3.11, 3.21, 3.70),
}
_E2_DEV_US_BY_OBJECTIVE = (1.05, 6.00, 6.80)


def sol_result(
    latencies: tuple[float, ...] | None,
    *,
    abs_err: float = 4.77e-07,
    rel_err: float = 3.05e-06,
    objective: str | None = None,
) -> dict[str, Any]:
    """The ``RESULT_JSON`` dict reference/test_kernel.py ``_summarize()`` produces (keys sorted,
    as its print line uses ``sort_keys=True``). ``None`` latencies = every workload failed.

    ``objective`` (atrex v0.3.0): the evaluator also reports ``performance_objective``, its
    ``performance_score`` and ``speedup_vs_ref_mean`` (the arithmetic mean of the per-workload
    speedups over the reference), and ``speedup_vs_ref_geomean`` is null, as Atrex-Bench's
    test_kernel ``result_from_eval`` does (index id 68528712763). SOL's own v0.3 test_kernel.py
    is not in the search index; the supervisor reads the same keys from either
    (orchestrator/session_io.py ``_record_local_test_result``, index id 68632735111)."""
    if latencies is None:
        failures = [f"{uuid[:8]}=INCORRECT_NUMERICAL ({{'batch_size': {b}}})" for uuid, b in WORKLOADS]
        result = {
            "total": len(WORKLOADS),
            "passed": 0,
            "all_pass": False,
            "failures": failures,
            "latency_us_by_shape": {},
            "latency_us_geomean": 0.0,
            "latency_us_arith_mean": 0.0,
            "speedup_vs_ref_geomean": 0.0,
            "max_abs_err": 1.84,
            "max_rel_err": 412.7,
        }
    else:
        result = {
            "total": len(WORKLOADS),
            "passed": len(WORKLOADS),
            "all_pass": True,
            "failures": [],
            "latency_us_by_shape": dict(zip(WORKLOAD_IDS, latencies, strict=True)),
            "latency_us_geomean": _geomean(list(latencies)),
            "latency_us_arith_mean": sum(latencies) / len(latencies),
            "speedup_vs_ref_geomean": _geomean([r / k for r, k in zip(_REF_US, latencies, strict=True)]),
            "max_abs_err": abs_err,
            "max_rel_err": rel_err,
        }
    if objective is not None:
        mean = (
            sum(r / k for r, k in zip(_REF_US, latencies, strict=True)) / len(latencies)
            if latencies is not None
            else None
        )
        result.update(
            performance_objective=objective,
            performance_score=mean,
            speedup_vs_ref_mean=mean,
            speedup_vs_ref_geomean=None,
        )
    return dict(sorted(result.items()))


# ───────────────────────────── the campaign, as data ─────────────────────────────


@dataclass
class _Campaign:
    """Everything the supervisor writes, given the commit hashes it produced.

    ``hashes`` keys: v0_source, v0_measure, e1_trial1..e1_trial5, e1_candidate, e1_promote,
    e2_checkpoint, e2_candidate, e2_promote, e3_checkpoint, e3_outcome.
    """

    ws: Path
    worktree_root: Path
    hashes: dict[str, str] = field(default_factory=dict)
    objective: str | None = None  # atrex v0.3.0's performance_objective; None: v0.2 records

    def result(self, latencies: tuple[float, ...] | None, **errors: float) -> dict[str, Any]:
        return sol_result(latencies, objective=self.objective, **errors)

    def abba(self) -> dict[tuple[str, int], tuple[float, float, float]]:
        return _E2_ABBA_US_BY_OBJECTIVE if self.objective else _E2_ABBA_US

    def reference_fields(self, result: dict[str, Any], score: float | None = None) -> dict[str, Any]:
        """The performance keys after which a record names its reference speedup: at the pin
        ``speedup_vs_ref_geomean``; in v0.3.0 (long_horizon/campaign.py ``_memory_record`` and
        ``_outcome_memory_record`` @e68a2935, index id 62458180674; session_io.py for v0) the
        objective, its score, the mean speedup, and a null geomean under the mean objective."""
        if not self.objective:
            return {"speedup_vs_ref_geomean": result["speedup_vs_ref_geomean"]}
        return {
            "performance_objective": result["performance_objective"],
            "performance_score": result["performance_score"] if score is None else score,
            "speedup_vs_ref_mean": result["speedup_vs_ref_mean"] if score is None else score,
            "speedup_vs_ref_geomean": None,
        }

    # paths ------------------------------------------------------------------------------------
    def branch(self, episode: int) -> str:
        return f"atrex/long-e{episode:04d}-{_EPISODE_IDS[episode][0]}"

    def worktree(self, episode: int) -> Path:
        return self.worktree_root / f"e{episode:04d}-{_EPISODE_IDS[episode][1]}"

    def base(self, episode: int) -> str:
        return self.hashes[{1: "v0_measure", 2: "e1_promote", 3: "e2_promote", 4: "e3_outcome"}[episode]]

    # episode journals (long_horizon/journal.py initialize/append_experiment/finalize) ---------
    def experiments(self, episode: int) -> list[dict[str, Any]]:
        if episode == 1:
            rows = []
            names = (
                (
                    "one Triton program per row, whole 512-wide row in registers, num_warps=4",
                    "replace the PyTorch body of run() with _rmsnorm_row_kernel (BLOCK_N=512, num_warps=4)",
                ),
                (
                    "more warps per row hide the reduction latency",
                    "num_warps 4 -> 8 in the _rmsnorm_row_kernel launch",
                ),
                ("tl.rsqrt is cheaper than 1/sqrt", "rstd = tl.rsqrt(ms + eps)"),
                (
                    "evict_first on the streamed activations keeps the weight in L2",
                    'eviction_policy="evict_first" on the x load',
                ),
                ("a 256-wide tile halves register pressure", "BLOCK_N=256"),
            )
            best = None
            for trial, ((hypothesis, change), lat) in enumerate(
                zip(names, _E1_TRIAL_US, strict=True), start=1
            ):
                result = self.result(lat)
                if lat is None:
                    evidence = (
                        "official base-seed evaluator: 0/3 PASS (INCORRECT_NUMERICAL on every workload)"
                    )
                    outcome, decision = (
                        "FAIL: BLOCK_N < hidden_size drops half of every row",
                        "reject_and_continue",
                    )
                else:
                    geo = result["latency_us_geomean"]
                    evidence = f"official base-seed evaluator: 3/3 PASS, geomean {geo:.2f} us"
                    if best is None or geo < best:
                        best = geo
                        outcome, decision = f"PASS, new best_latency {geo:.2f} us", "keep_as_best"
                    else:
                        outcome, decision = (
                            f"PASS but slower than best_latency {best:.2f} us",
                            "reject_and_continue",
                        )
                rows.append(
                    {
                        "name": f"fast trial {trial}: plan -> implement -> evaluator",
                        "hypothesis": hypothesis,
                        "change": change,
                        "evidence": evidence,
                        "result": outcome,
                        "decision": decision,
                        "timestamp": _ts(68 + 20 * trial),
                    }
                )
            return rows
        if episode == 2:
            return [
                {
                    "name": "profile v1 incumbent",
                    "hypothesis": "small batches are latency bound",
                    "change": "none (ncu via tools/profile_nvidia.sh on profile_driver.py)",
                    "evidence": "batch_size=1: one CTA, 0.4% of SMs busy; batch_size=128: DRAM 9% of peak",
                    "result": "launch/occupancy bound, not bandwidth bound",
                    "decision": "continue",
                    "timestamp": _ts(260),
                },
                {
                    "name": "8 rows per program",
                    "hypothesis": "fewer, fatter programs amortize the launch",
                    "change": "_rmsnorm_rows_kernel with BLOCK_M=8",
                    "evidence": "dev evaluator 3/3 PASS",
                    "result": "slower than BLOCK_M=4 at batch_size=33",
                    "decision": "revert",
                    "latency_us_geomean": 2.95,
                    "timestamp": _ts(300),
                },
                {
                    "name": "4 rows per program",
                    "hypothesis": "BLOCK_M=4 balances occupancy and reuse",
                    "change": "_rmsnorm_rows_kernel with BLOCK_M=4, 2-D tile load",
                    "evidence": "dev evaluator 3/3 PASS, geomean 2.84 us",
                    "result": "PASS, -14% vs incumbent",
                    "decision": "continue",
                    "latency_us_geomean": 2.84,
                    "timestamp": _ts(330),
                },
            ]
        if episode == 3:
            return [
                {
                    "name": "profile v2 incumbent",
                    "hypothesis": "the row reduction serializes",
                    "change": "none (profiling only)",
                    "evidence": "ncu: 38% of stalls on the tl.sum reduction barrier",
                    "result": "reduction is the largest stall",
                    "decision": "continue",
                    "timestamp": _ts(470),
                },
                {
                    "name": "split-row reduction",
                    "hypothesis": "two half-row sums shorten the tree",
                    "change": "split the 512 columns into two 256-wide halves (checkpoint commit)",
                    "evidence": "dev evaluator 3/3 PASS, geomean 2.97 us",
                    "result": "slower than the incumbent on every workload",
                    "decision": "revert",
                    "timestamp": _ts(520),
                },
                {
                    "name": "persistent grid",
                    "hypothesis": "a grid of num_SMs programs removes tail effects",
                    "change": "persistent loop over row blocks",
                    "evidence": "dev evaluator 3/3 PASS, geomean 3.02 us",
                    "result": "slower; the grid is already tiny",
                    "decision": "pivot",
                    "timestamp": _ts(560),
                },
            ]
        return [
            {
                "name": "profile v2 incumbent at batch_size=128",
                "hypothesis": "weight reloads per row block",
                "change": "none (profiling only)",
                "evidence": "ncu: weight bytes 25% of DRAM reads",
                "result": "weight reuse across row blocks is a lever",
                "decision": "continue",
                "timestamp": _ts(640),
            },
            {
                "name": "num_warps=2 for BLOCK_M=4",
                "hypothesis": "4 rows x 512 fp32 fit two warps",
                "change": "num_warps 4 -> 2 (uncommitted)",
                "evidence": "dev evaluator pending",
                "result": "awaiting the sandbox evaluator",
                "decision": "continue",
                "timestamp": _ts(665),
            },
        ]

    def outcome(self, episode: int) -> dict[str, Any]:
        if episode == 1:
            geo = self.result(_E1_TRIAL_US[E1_BEST_TRIAL - 1])["latency_us_geomean"]
            return {
                "summary": f"Fast episode 1: trial {E1_BEST_TRIAL} (one Triton program per row, num_warps=8) "
                f"is the fastest passing candidate at {geo:.2f} us geomean.",
                "next_directions": [
                    "Process several rows per program: batch_size=1 and 33 are launch bound",
                    "Profile the row reduction before touching the memory path",
                ],
            }
        if episode == 2:
            return {
                "summary": "Four rows per program as one 2-D tile cut the geomean by ~14%; candidate committed.",
                "next_directions": [
                    "Restructure the row reduction (ncu shows reduction stalls)",
                    "Reuse the weight tile across row blocks for batch_size=128",
                ],
            }
        return {
            "summary": "Split-row and persistent-grid reductions were slower than the v2 multi-row kernel "
            "on every workload; the reduction-restructuring direction is exhausted.",
            "next_directions": [
                "Reuse the weight tile across row blocks for batch_size=128",
                "Tune num_warps for BLOCK_M=4",
            ],
        }

    def candidate(self, episode: int) -> str | None:
        return {1: self.hashes.get("e1_candidate"), 2: self.hashes.get("e2_candidate")}.get(episode)

    def journal(self, episode: int) -> dict[str, Any]:
        """long_horizon/journal.py: initialize() keys, then finalize() sets state/outcome/
        candidate_commit/finalized_at (candidate_commit is appended last)."""
        start = {1: 50, 2: 250, 3: 460, 4: 630}[episode]
        value: dict[str, Any] = {
            "schema_version": 1,
            "episode": episode,
            "memory_version": episode,
            "base_commit": self.base(episode),
            "episode_branch": self.branch(episode),
            "state": "in_progress",
            "experiments": self.experiments(episode),
            "outcome": None,
            "created_at": _ts(start),
            "finalized_at": None,
        }
        if episode < 4:
            value["state"] = "pivot" if episode == 3 else "candidate_ready"
            value["outcome"] = self.outcome(episode)
            value["candidate_commit"] = self.candidate(episode)
            value["finalized_at"] = _ts({1: 172, 2: 340, 3: 570}[episode])
        return value

    def handoff(self, episode: int) -> dict[str, Any]:
        """The agent's terminal handoff (orchestrator/prompts/episode.md terminal contract)."""
        if episode == 3:
            return {"status": "pivot", "last_trial_commit": self.hashes["e3_checkpoint"]}
        return {"status": "candidate_ready", "candidate_commit": self.candidate(episode)}

    def evaluations(self, episode: int) -> list[dict[str, Any]]:
        """tools/sandbox.py _record_episode_evaluation(): one JSON line per evaluator run."""
        if episode == 1:
            kernels = E1_TRIAL_KERNELS
            results = [self.result(lat) for lat in _E1_TRIAL_US]
            minutes = [65 + 20 * t for t in range(1, 6)]
        elif episode == 2:
            kernels, results, minutes = (
                (KERNEL_E2_CHECKPOINT, KERNEL_V2),
                [
                    self.result((2.82, 2.90, 3.16)),
                    self.result(_E2_DEV_US_BY_OBJECTIVE if self.objective else (2.70, 2.77, 3.05)),
                ],
                [295, 325],
            )
        elif episode == 3:
            kernels, results, minutes = (KERNEL_E3_CHECKPOINT,), [self.result(_E3_CHECKPOINT_US)], [515]
        else:
            return []
        return [
            {
                "schema_version": 2,
                "timestamp": _ts(minute),
                "gateway_kind": "dev",
                "job_id": None,
                "kernel_sha256": hashlib.sha256(kernel.encode("utf-8")).hexdigest(),
                "result": result,
            }
            for kernel, result, minute in zip(kernels, results, minutes, strict=True)
        ]

    # verification (long_horizon/models.py VerificationResult.as_dict) --------------------------
    def verification(self, episode: int) -> dict[str, Any] | None:
        if episode == 1:
            best = self.result(_E1_TRIAL_US[E1_BEST_TRIAL - 1])
            incumbent = self.result(_V0_US)["latency_us_geomean"]
            candidate = best["latency_us_geomean"]
            # long_horizon/campaign.py _latest_complete_episode_performance()
            run_result = {
                "all_pass": True,
                "latency_us_geomean": candidate,
                "latency_us_arith_mean": best["latency_us_arith_mean"],
                "latency_us_by_shape": best["latency_us_by_shape"],
                "speedup_vs_ref_geomean": best["speedup_vs_ref_geomean"],
                "max_abs_err": best["max_abs_err"],
                "max_rel_err": best["max_rel_err"],
                "eval_id": None,
                "timestamp": self.evaluations(1)[E1_BEST_TRIAL - 1]["timestamp"],
            }
            scores = None
            if self.objective:
                run_result.update({k: best[k] for k in sorted(OBJECTIVE_RESULT_KEYS)})
                scores = (best["performance_score"], self.result(_V0_US)["performance_score"])
            return {
                "gate": "PASS",
                "candidate_latency_us": candidate,
                "incumbent_latency_us": incumbent,
                "improvement_pct": self._improvement(incumbent, candidate, scores),
                "runs": [
                    {
                        "revision": "candidate",
                        "repeat": 0,
                        "exit_code": 0,
                        "result": run_result,
                        "stdout_tail": "",
                        "stderr_tail": "",
                    }
                ],
                "error": None,
                "artifact": str(self.worktree(1) / RUNTIME_DIR / "evaluations.jsonl"),
                **self._scores(scores),
            }
        if episode == 2:
            runs = []
            for (revision, repeat), lat in self.abba().items():
                result = self.result(lat)
                tail = (
                    f"[test_kernel] RESULT_JSON={json.dumps(result, sort_keys=True)}\n"
                    "[test_kernel] ready-to-submit -> submission.json\n"
                )
                runs.append(
                    {
                        "revision": revision,
                        "repeat": repeat,
                        "exit_code": 0,
                        "result": result,
                        "stdout_tail": tail[-3000:],
                        "stderr_tail": "",
                    }
                )
            cand = _geomean([r["result"]["latency_us_geomean"] for r in runs if r["revision"] == "candidate"])
            inc = _geomean([r["result"]["latency_us_geomean"] for r in runs if r["revision"] == "incumbent"])
            scores = None
            if self.objective:  # the arithmetic mean of each side's run scores
                side = {
                    rev: [r["result"]["performance_score"] for r in runs if r["revision"] == rev]
                    for rev in ("candidate", "incumbent")
                }
                scores = (
                    sum(side["candidate"]) / len(side["candidate"]),
                    sum(side["incumbent"]) / len(side["incumbent"]),
                )
            return {
                "gate": "PASS",
                "candidate_latency_us": cand,
                "incumbent_latency_us": inc,
                "improvement_pct": self._improvement(inc, cand, scores),
                "runs": runs,
                "error": None,
                "artifact": str(self.worktree(2) / VERIFY_DIR / _ABBA_ID / "result.json"),
                **self._scores(scores),
            }
        return None

    @staticmethod
    def _improvement(incumbent: float, candidate: float, scores: tuple[float, float] | None) -> float:
        """At the pin the latency reduction in percent; in v0.3.0 the performance score's gain
        (``score_verification_payload``, index id 69770463870: candidate/incumbent - 1)."""
        if scores is not None:
            return (scores[0] / scores[1] - 1.0) * 100.0
        return (incumbent - candidate) / incumbent * 100.0

    @staticmethod
    def _scores(scores: tuple[float, float] | None) -> dict[str, float]:
        """models.py VerificationResult.as_dict @6864c759 adds both sides' scores."""
        if scores is None:
            return {}
        return {"candidate_performance_score": scores[0], "incumbent_performance_score": scores[1]}

    # canonical memory -------------------------------------------------------------------------
    def memory_v0(self) -> dict[str, Any]:
        """orchestrator/session_io.py _record_local_test_result() on an empty record, then
        orchestrator/campaign.py Campaign._finalize_v0_measurement()."""
        result = self.result(_V0_US, abs_err=0.0, rel_err=0.0)
        return {
            "version": "v0",
            "masked": False,
            "timestamp": _ts(30),
            "performance": {
                "latency_us": result["latency_us_geomean"],
                "latency_us_geomean": result["latency_us_geomean"],
                "latency_us_arith_mean": result["latency_us_arith_mean"],
                "latency_us_by_shape": result["latency_us_by_shape"],
                "measurement_scope": "real_evaluator_shapes",
                "shape_ids_are_opaque": False,
                "measurement_status": "complete",
                "measured_shape_count": len(WORKLOADS),
                **self.reference_fields(result),
            },
            "correctness": {"status": "PASS", "max_abs_err": 0.0, "max_rel_err": 0.0},
            "quality_gate": {"result": "PASS", "failure_reason": None},
            "git_commit_hash": self.hashes["v0_source"],
            "optimization": {
                "action_category": "baseline",
                "action_description": "verbatim reference wrapper measured by the official full-workload evaluator",
                "expected_impact": "correctness and latency reference for later versions",
                "risks_and_rollback": "none; immutable V0 reference baseline",
            },
        }

    def experience(self, episode: int) -> dict[str, Any]:
        """long_horizon/campaign.py _memory_experience(): index + the seven text fields; any
        other journal keys folded into a sorted-JSON ``details`` string."""
        core = ("name", "hypothesis", "change", "evidence", "result", "decision", "timestamp")
        rows = []
        for index, raw in enumerate(self.experiments(episode), start=1):
            row: dict[str, Any] = {"index": index}
            for key in core:
                if key in raw:
                    value = raw[key]
                    row[key] = value.strip() if isinstance(value, str) else json.dumps(value, sort_keys=True)
            extra = {k: v for k, v in raw.items() if k not in core}
            if extra:
                row["details"] = json.dumps(extra, ensure_ascii=False, sort_keys=True)
            rows.append(row)
        return {"experiment_count": len(rows), "recorded_experiment_count": len(rows), "experiments": rows}

    def _directions(self, episode: int) -> list[dict[str, str]]:
        return [
            {"direction": d, "rationale": "carried from terminal episode journal"}
            for d in self.outcome(episode)["next_directions"]
        ]

    def memory_promoted(self, episode: int) -> dict[str, Any]:
        """long_horizon/campaign.py LongHorizonCampaign._memory_record() (fast for episode 1,
        full/ABBA for episode 2)."""
        fast = episode == 1
        verification = self.verification(episode)
        assert verification is not None
        candidate_runs = [r for r in verification["runs"] if r["revision"] == "candidate"]
        representative = candidate_runs[-1]["result"]
        by_shape = {
            uuid: _geomean([r["result"]["latency_us_by_shape"][uuid] for r in candidate_runs])
            if len(candidate_runs) > 1
            else candidate_runs[0]["result"]["latency_us_by_shape"][uuid]
            for uuid in WORKLOAD_IDS
        }
        latency = verification["candidate_latency_us"]
        experiments = len(self.experiments(episode))
        return {
            "version": f"v{episode}",
            "masked": False,
            "timestamp": _ts({1: 178, 2: 352}[episode]),
            "performance": {
                "latency_us": latency,
                "latency_us_geomean": latency,
                "latency_us_arith_mean": representative["latency_us_arith_mean"],
                "latency_us_by_shape": by_shape,
                "measurement_scope": "real_evaluator_shapes",
                "shape_ids_are_opaque": False,
                "measurement_status": "complete",
                "measured_shape_count": len(by_shape),
                "expected_shape_count": None,
                "shape_measurement_repeats": len(candidate_runs),
                "measurement_subject": "candidate",
                "measurement_source": "episode_evaluator_result" if fast else "authoritative_verification",
                "comparison_method": "single_candidate_vs_canonical_incumbent"
                if fast
                else "same_allocation_abba",
                "carried_from_version": None,
                **self.reference_fields(representative, verification.get("candidate_performance_score")),
                "tflops_peak_utilization_pct": None,
                "bandwidth_peak_utilization_pct": None,
                "authoritative_improvement_pct": verification["improvement_pct"],
            },
            "optimization": {
                "action_category": "fast_long_horizon_episode" if fast else "long_horizon_episode",
                "action_description": self.outcome(episode)["summary"],
                "expected_impact": "best of 5 evaluator-backed trials against canonical incumbent"
                if fast
                else "independently verified incumbent/candidate latency reduction",
                "risks_and_rollback": "candidate retained on isolated episode branch",
            },
            "profile_evidence": {
                "tool_used": "none (fast mode)"
                if fast
                else "episode-owned profiler evidence plus supervisor ABBA",
                "evidence_summary": f"{experiments} structured experiments",
                "bottleneck_type": "not_profiled_fast_mode" if fast else "episode-derived",
                "evidence_chain": "5 reviewed plan -> implementation -> evaluator trials -> best-candidate promotion"
                if fast
                else "episode evidence -> candidate -> independent ABBA -> promotion",
            },
            "experience": self.experience(episode),
            "correctness": {
                "status": "PASS",
                "max_abs_err": representative["max_abs_err"],
                "max_rel_err": representative["max_rel_err"],
            },
            "quality_gate": {"result": "PASS", "failure_reason": None},
            "open_directions": self._directions(episode),
            "git_commit_hash": self.candidate(episode),
            "long_horizon": {
                "status": "candidate_ready",
                "mode": "fast" if fast else "full",
                "verification": "single_evaluator" if fast else "abba",
                "fast_trials": 5 if fast else None,
            },
        }

    def memory_pivot(self) -> dict[str, Any]:
        """long_horizon/campaign.py LongHorizonCampaign._outcome_memory_record() for the episode-3
        ``pivot``: the worktree kernel differs from the incumbent, so performance is carried
        forward from the newest complete passing canonical record (v2)."""
        v2 = self.memory_promoted(2)["performance"]
        summary = self.outcome(3)["summary"]
        return {
            "version": "v3",
            "masked": False,
            "timestamp": _ts(585),
            "performance": {
                "latency_us": v2["latency_us_geomean"],
                "latency_us_geomean": v2["latency_us_geomean"],
                "latency_us_arith_mean": v2["latency_us_arith_mean"],
                "latency_us_by_shape": v2["latency_us_by_shape"],
                "measurement_scope": "real_evaluator_shapes",
                "shape_ids_are_opaque": False,
                "measurement_status": "complete",
                "measured_shape_count": len(WORKLOADS),
                "expected_shape_count": None,
                "shape_measurement_repeats": v2["shape_measurement_repeats"],
                "measurement_subject": "incumbent",
                "measurement_source": "canonical_incumbent_carry_forward",
                "carried_from_version": "v2",
                **self.reference_fields(v2),
            },
            "optimization": {
                "action_category": "long_horizon_episode",
                "action_description": summary,
                "expected_impact": "episode exploration did not produce a promotable improvement",
                "risks_and_rollback": "incumbent kernel was preserved",
            },
            "profile_evidence": {
                "tool_used": "episode journal",
                "evidence_summary": f"{len(self.experiments(3))} structured experiments",
                "bottleneck_type": "episode-derived",
                "evidence_chain": "episode evidence -> terminal handoff -> no promotion",
            },
            "experience": self.experience(3),
            "correctness": {"status": "PASS", "max_abs_err": None, "max_rel_err": None},
            "quality_gate": {"result": "FAIL", "failure_reason": summary},
            "open_directions": self._directions(3),
            "git_commit_hash": None,
            "long_horizon": {
                "status": "pivot",
                "candidate_commit": None,
                "mode": "full",
                "fast_trials": None,
            },
        }

    # supervisor bookkeeping (long_horizon/campaign.py _record_terminal_episode) ------------------
    def telemetry_summary(self, episode: int) -> dict[str, Any]:
        """long_horizon/telemetry.py summarize_episode() when the backend reported no usage deltas."""
        phases = (
            "profile",
            "research",
            "planning",
            "implementation",
            "correctness",
            "benchmark",
            "recording",
        )
        terminal = {
            "input_tokens": None,
            "output_tokens": None,
            "cache_read_tokens": None,
            "cache_write_tokens": None,
            "total_tokens": _TOKENS[episode],
            "measurement": "partial",
        }
        reasons = ["backend_has_no_usage_delta", "structured_usage_unavailable"]
        return {
            "schema_version": "atrex_long_horizon_episode_telemetry_v1",
            "episode": episode,
            "version": f"v{episode}",
            "status": "pivot" if episode == 3 else "candidate_ready",
            "accepted": episode != 3,
            "control_tokens": _TOKENS[episode],
            "resume_count": 0,
            "invocation_count": 0,
            "invocations": [],
            "phase_tokens": {
                "terminal_usage": terminal,
                "phases": {
                    p: {
                        "usage": None,
                        "interval_count": 0,
                        "measurement": "unavailable",
                        "reason": "phase_not_observed",
                    }
                    for p in phases
                },
                "orchestration": None,
                "unattributed": terminal,
                "coverage": 0.0,
                "semantic_phase_coverage": 0.0,
                "accounted_coverage": 0.0,
                "measurement": "unavailable",
                "reconciliation_status": "reconciled",
                "reason_codes": reasons,
            },
            "phase_intervals": {p: [] for p in phases},
            "measurement": "unavailable",
            "reason_codes": reasons,
        }

    def attempt(self, episode: int, *, with_commit: bool = True) -> dict[str, Any]:
        """The attempt dict: archived as episodes/eNNNN/attempt.json, appended to state.json
        ``attempts``; ``{**attempt, "journal": ...}`` (without promotion_commit) is the
        ``memory/long_horizon_eNNNN.json`` evidence of a promoted episode."""
        pivot = episode == 3
        outcome = self.outcome(episode)
        head = self.hashes["e3_checkpoint"] if pivot else self.candidate(episode)
        value: dict[str, Any] = {
            "episode": episode,
            "version": episode,
            "mode": "fast" if episode == 1 else "full",
            "fast_trials": 5 if episode == 1 else None,
            "status": "pivot" if pivot else "candidate_ready",
            "accepted": not pivot,
            "violation": None,
            "base_commit": self.base(episode),
            "episode_branch": self.branch(episode),
            "episode_head": head,
            "candidate_commit": None if pivot else self.candidate(episode),
            "changed_paths": [] if pivot else ["kernel.py"],
            "session_id": _SESSION_IDS[episode],
            "resume_count": 0,
            "tokens": _TOKENS[episode],
            "summary": outcome["summary"],
            "next_directions": outcome["next_directions"],
            "verification": self.verification(episode),
            "telemetry": {
                "summary": f"{RUNTIME_DIR}/episodes/e{episode:04d}/telemetry.summary.json",
                "measurement": "unavailable",
                "reason_codes": ["backend_has_no_usage_delta", "structured_usage_unavailable"],
            },
        }
        if with_commit:
            if pivot:
                value["outcome_commit"] = self.hashes["e3_outcome"]
            else:
                value["promotion_commit"] = self.hashes[f"e{episode}_promote"]
        return value

    def evidence(self, episode: int) -> dict[str, Any]:
        return {**self.attempt(episode, with_commit=False), "journal": self.journal(episode)}

    def state(self) -> dict[str, Any]:
        """long_horizon/models.py SupervisorState.as_dict() after episodes 1-3."""
        return {
            "episodes": 3,
            "accepted": 2,
            "rejected": 0,
            "pivoted": 1,
            "blocked": 0,
            "protocol_failures": 0,
            "interrupted": 0,
            "tokens": sum(_TOKENS.values()),
            "consecutive_without_promotion": 1,
            "attempts": [self.attempt(e) for e in (1, 2, 3)],
        }

    def active(self) -> dict[str, Any]:
        """``.atrex_long_horizon/active_episode.json`` for the running episode 4."""
        return {
            "episode": 4,
            "memory_version": 4,
            "base_commit": self.base(4),
            "episode_branch": self.branch(4),
            "worktree": str(self.worktree(4)),
            "mode": "full",
            "fast_trials": None,
            "phase": "exploring",
        }

    def live(self, *, running: bool) -> dict[str, Any]:
        """long_horizon/journal.py sync_live_memory(): the running episode's journal after its
        latest append (phase "exploring"), or, between episodes, the view the supervisor left
        after recording episode 3 (phase "recorded")."""
        episode = 4 if running else 3
        journal = self.journal(episode)
        experiments = journal["experiments"]
        phase = "exploring" if running else "recorded"
        return {
            "schema_version": "atrex_long_horizon_live_v1",
            "canonical": False,
            "canonical_memory_recorded": phase == "recorded",
            "note": LIVE_NOTE,
            "version": f"v{episode}",
            "episode": episode,
            "phase": phase,
            "journal_state": journal["state"],
            "experiment_count": len(experiments),
            "latest_experiment": experiments[-1] if experiments else None,
            "outcome": journal["outcome"],
            "candidate_commit": journal.get("candidate_commit"),
            "base_commit": journal["base_commit"],
            "episode_branch": journal["episode_branch"],
            "created_at": journal["created_at"],
            "updated_at": _ts(666 if running else 586),
            "canonical_memory": None if running else "memory/v3.json",
            "accepted": None if running else False,
        }

    def brief(self, episode: int) -> str:
        """``episodes/eNNNN/BRIEF.md``: the rendered episode prompt (abridged stand-in)."""
        fast = episode == 1
        return (
            f"# Kernel optimization episode {episode}\n\n"
            "(kernelscope fixture: abridged rendering of orchestrator/prompts/"
            f"{'fast_episode' if fast else 'episode'}.md)\n\n"
            "## Context\n\n"
            f"- Workspace: `{self.worktree(episode)}`\n"
            f"- Canonical version produced by the supervisor: `v{episode}`\n"
            f"- Platform: `{PLATFORM}`\n"
            f"- Framework: `{FRAMEWORK}`\n"
            f"- Incumbent commit: `{self.base(episode)}`\n"
            f"- Episode branch: `{self.branch(episode)}`\n"
            f"- Journal: `{self.worktree(episode) / RUNTIME_DIR / 'journal.json'}`\n"
            f"- Handoff: `{self.worktree(episode) / RUNTIME_DIR / 'handoff.json'}`\n"
        )

    def baseline_report(self) -> str:
        """baseline_report.md as Campaign._write_v0_baseline_report() renders it."""
        result = self.result(_V0_US, abs_err=0.0, rel_err=0.0)
        return (
            "# V0 baseline report\n\n"
            "This report was generated mechanically by the campaign supervisor.\n\n"
            "## Provenance\n\n"
            f"- Source commit: `{self.hashes['v0_source']}`\n"
            "- Implementation: verbatim `reference.py` copied to `kernel.py`\n"
            "- Evaluator: `workspace test_kernel.py`\n"
            "- Route: remote sandbox, one base-seed full-workload run\n"
            "- Evaluator id: `unknown`\n\n"
            "## Result\n\n"
            "- Correctness: `PASS`\n"
            f"- Measured shapes: `{len(WORKLOADS)}`\n"
            f"- Geomean latency: `{result['latency_us_geomean']:.6g} us`\n"
            f"- Arithmetic mean latency: `{result['latency_us_arith_mean']:.6g} us`\n"
            "- Maximum absolute error: `0`\n"
            "- Maximum relative error: `0`\n\n"
            "The complete public workload was evaluated. Per-shape values are stored once in "
            "`memory/v0.json`; they are not duplicated here.\n"
        )

    # writers ----------------------------------------------------------------------------------
    def write_episode_runtime(self, episode: int) -> None:
        """What _record_terminal_episode leaves in ``.atrex_long_horizon/episodes/eNNNN/``
        (the git-derived ``archive/`` is added by build_atrex_sol_workspace)."""
        directory = self.ws / RUNTIME_DIR / "episodes" / f"e{episode:04d}"
        _write(directory / "BRIEF.md", self.brief(episode))
        runtime = directory / "episode_runtime"  # copy of the worktree's .atrex_long_horizon/
        _write_json(runtime / "journal.json", self.journal(episode))
        _write_json(runtime / "handoff.json", self.handoff(episode))
        _write(
            runtime / "evaluations.jsonl",
            "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in self.evaluations(episode)),
        )
        if episode == 1:
            _write(
                runtime / "policy_review_request.json",
                json.dumps(
                    {"schema_version": 1, "candidate_commit": self.candidate(1)}, separators=(",", ":")
                )
                + "\n",
            )
        if episode == 2:
            verify = directory / "verification_runtime" / _ABBA_ID
            verification = self.verification(2)
            assert verification is not None
            _write_json(
                verify / "request-0000.json",
                {
                    "schema_version": 1,
                    "schedule": [
                        {"revision": r["revision"], "repeat": r["repeat"]} for r in verification["runs"]
                    ],
                    "manifests": {
                        "incumbent": {"kernel.py": "snapshots/incumbent/0000.bin"},
                        "candidate": {"kernel.py": "snapshots/candidate/0000.bin"},
                    },
                    "command": ["python3", "test_kernel.py", "--version", "vlong", "--no-memory"],
                    "run_timeout_seconds": 120,
                },
            )
            _write_json(
                verify / "result.json",
                {
                    "schema_version": 1,
                    "runs": [
                        {
                            k: r[k]
                            for k in (
                                "revision",
                                "repeat",
                                "exit_code",
                                "result",
                                "stdout_tail",
                                "stderr_tail",
                            )
                        }
                        for r in verification["runs"]
                    ],
                    "error": None,
                },
            )
            _write(verify / "snapshots" / "incumbent" / "0000.bin", KERNEL_V1)
            _write(verify / "snapshots" / "candidate" / "0000.bin", KERNEL_V2)
        summary = self.telemetry_summary(episode)
        _write_json(directory / "telemetry.summary.json", summary)
        _write(
            directory / "telemetry.brief.md",
            f"# Long-horizon Episode {episode}\n\n- version: `v{episode}`\n"
            f"- status: `{summary['status']}`\n- accepted: `{summary['accepted']}`\n"
            f"- control tokens: `{_TOKENS[episode]:,}`\n- measurement: `unavailable`\n",
        )
        _write_json(directory / "attempt.json", self.attempt(episode))

    def write_runtime_state(self, *, live: bool, orchestrator: bool) -> None:
        """Supervisor files that are never committed (gitignored or in .git/info/exclude)."""
        for episode in (1, 2, 3):
            self.write_episode_runtime(episode)
        _write_json(self.ws / RUNTIME_DIR / "state.json", self.state())
        if live:
            _write(self.ws / RUNTIME_DIR / "episodes" / "e0004" / "BRIEF.md", self.brief(4))
            _write_json(self.ws / RUNTIME_DIR / "active_episode.json", self.active())
        _write_json(self.ws / "memory" / "live.json", self.live(running=live))
        if orchestrator:
            # orchestrator/workspace_state.py write_stall(): indent=2, no trailing newline.
            _write(self.ws / STALL_STATE_FILE, json.dumps({"stall": 1}, indent=2))
            _write_json(
                self.ws / MODE_STATE_FILE,
                {"mode": OPTIMIZATION_MODE, "framework": FRAMEWORK, "agent_runtime": AGENT_CLI},
            )

    def write_canonical_memory(self) -> None:
        memory = self.ws / "memory"
        _write_json(memory / "v0.json", self.memory_v0())
        _write_json(memory / "v1.json", self.memory_promoted(1))
        _write_json(memory / "long_horizon_e0001.json", self.evidence(1))
        _write_json(memory / "v2.json", self.memory_promoted(2))
        _write_json(memory / "long_horizon_e0002.json", self.evidence(2))
        _write_json(memory / "v3.json", self.memory_pivot())


def _default_worktree_root(ws: Path) -> Path:
    """long_horizon/git_episode.py EpisodeWorktree.plan(): <ws.parent>/.atrex_long_horizon_worktrees/<ws.name>."""
    return ws.parent / ".atrex_long_horizon_worktrees" / ws.name


def write_atrex_memory(ws: Path, *, live: bool = True, orchestrator: bool = True) -> None:
    """Write today's atrex memory and supervisor state into an existing directory (no git writes).

    Reproduces the files written by ``long_horizon/campaign.py`` (``_memory_record``,
    ``_outcome_memory_record``, ``_record_terminal_episode``), ``long_horizon/git_episode.py``
    (``promote_candidate``: ``memory/long_horizon_eNNNN.json``), ``long_horizon/journal.py``
    (journals, ``sync_live_memory``), ``long_horizon/store.py`` (``state.json``,
    ``active_episode.json``, ``episodes/eNNNN/``) and ``orchestrator/workspace_state.py``
    (``write_stall``):

    - ``memory/v0.json`` baseline, ``v1.json`` (fast episode), ``v2.json`` (full episode, ABBA),
      ``v3.json`` pivot (gate FAIL, ``git_commit_hash: null``, performance carried from v2);
    - ``memory/long_horizon_e0001.json``, ``long_horizon_e0002.json`` (promoted episodes only);
    - ``memory/live.json``: the running episode 4 (``live=True``) or the recorded episode 3;
    - ``.atrex_long_horizon/state.json``, ``episodes/e0001..e0003/{BRIEF.md, attempt.json,
      telemetry.*, episode_runtime/{journal.json, handoff.json, evaluations.jsonl}}``, and with
      ``live`` ``active_episode.json`` + ``episodes/e0004/BRIEF.md``;
    - with ``orchestrator``: ``.orchestrator_state.json`` (stall counter) and
      ``.orchestrator_mode.json`` (policy identity).

    Commit hashes: ``ws``'s HEAD when ``ws`` is a git work tree with a commit (every record then
    cites that real commit), otherwise deterministic placeholders. ``build_atrex_sol_workspace``
    produces the same files with the real per-version history. The running episode's own journal
    lives in its git worktree (``active_episode.json`` ``worktree``), which only
    ``build_atrex_sol_workspace`` creates; here ``memory/live.json`` is its only trace.
    """
    ws = Path(ws).resolve()
    ws.mkdir(parents=True, exist_ok=True)
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=ws, capture_output=True, text=True, check=False
    ).stdout.strip()
    head = ""
    if top and Path(top).resolve() == ws:
        head = subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "HEAD^{commit}"],
            cwd=ws,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    keys = (
        "v0_source",
        "v0_measure",
        *(f"e1_trial{i}" for i in range(1, 6)),
        "e1_candidate",
        "e1_promote",
        "e2_checkpoint",
        "e2_candidate",
        "e2_promote",
        "e3_checkpoint",
        "e3_outcome",
    )
    hashes = {k: head or hashlib.sha1(f"kernelscope-fixture:{k}".encode()).hexdigest() for k in keys}
    campaign = _Campaign(ws, _default_worktree_root(ws), hashes)
    campaign.write_canonical_memory()
    campaign.write_runtime_state(live=live, orchestrator=orchestrator)


# ───────────────────────────── git-backed builders ─────────────────────────────


class _Git:
    """git with a fixed identity and clock, isolated from the user's global configuration."""

    def __init__(self) -> None:
        self.clock = 0.0

    def __call__(self, cwd: Path, *args: str, minutes: float | None = None) -> str:
        env = {
            **os.environ,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
        }
        if minutes is not None:
            self.clock = minutes
        stamp = (_T0 + timedelta(minutes=self.clock)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = stamp
        done = subprocess.run(
            ["git", *_GIT_IDENTITY, *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
        return done.stdout.strip()

    def commit(self, cwd: Path, message: str, *paths: str, minutes: float) -> str:
        if paths:
            self(cwd, "add", "--", *paths)
        self(cwd, "commit", "-q", "-m", message, minutes=minutes)
        return self(cwd, "rev-parse", "HEAD")


def _archive(git: _Git, campaign: _Campaign, episode: int, head: str) -> None:
    """long_horizon/git_episode.py EpisodeWorktree.archive(): patches, changed and evidence files,
    git.json, under ``episodes/eNNNN/archive/``."""
    tree = campaign.worktree(episode)
    base = campaign.base(episode)
    dest = campaign.ws / RUNTIME_DIR / "episodes" / f"e{episode:04d}" / "archive"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "candidate.patch").write_text(git(tree, "diff", "--binary", base, head, "--") + "\n")
    (dest / "worktree.patch").write_text(git(tree, "diff", "--binary", base, "--") + "\n")
    changed = [
        p for p in git(tree, "diff", "--name-only", "--no-renames", base, head, "--").splitlines() if p
    ]
    evidence = [
        p
        for p in git(
            tree,
            "ls-files",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--",
            "plans",
            "profiles",
            ".humanize",
        ).splitlines()
        if p
    ]
    for relative in sorted({*changed, *evidence}):
        target = dest / "worktree_files" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / relative, target)
    _write_json(
        dest / "git.json",
        {
            "episode": episode,
            "base_commit": base,
            "branch": campaign.branch(episode),
            "head": git(tree, "rev-parse", "HEAD"),
            "dirty_paths": [],
        },
    )


def _open_worktree(git: _Git, campaign: _Campaign, episode: int, *, orchestrator: bool) -> Path:
    """EpisodeWorktree.materialize() plus link_episode_runtime()'s ignored policy file."""
    tree = campaign.worktree(episode)
    tree.parent.mkdir(parents=True, exist_ok=True)
    git(
        campaign.ws,
        "worktree",
        "add",
        "-q",
        "-b",
        campaign.branch(episode),
        str(tree),
        campaign.base(episode),
    )
    if orchestrator:  # install_workspace_policy() in a fresh worktree: no agent_runtime key there
        _write_json(tree / MODE_STATE_FILE, {"mode": OPTIMIZATION_MODE, "framework": FRAMEWORK})
    return tree


def _promote(git: _Git, campaign: _Campaign, episode: int, minutes: float) -> str:
    """promote_candidate(): squash-merge the candidate, add memory/vN.json + long_horizon_eNNNN.json."""
    ws = campaign.ws
    git(ws, "merge", "--squash", "--no-commit", campaign.candidate(episode) or "", minutes=minutes)
    _write_json(ws / "memory" / f"long_horizon_e{episode:04d}.json", campaign.evidence(episode))
    _write_json(ws / "memory" / f"v{episode}.json", campaign.memory_promoted(episode))
    return git.commit(
        ws,
        SUPERVISOR_COMMIT_SUBJECTS["promotion"].format(episode=episode),
        f"memory/long_horizon_e{episode:04d}.json",
        f"memory/v{episode}.json",
        minutes=minutes,
    )


def build_atrex_sol_workspace(
    ws: Path,
    *,
    live: bool = True,
    orchestrator: bool = True,
    worktree_root: Path | None = None,
    objective: str | None = None,
) -> Path:
    """A SOL-ExecBench workspace as atrex's supervisor leaves it on its branch; returns ``ws``.

    Reproduces, step by step: ``reference/sol_seed.py`` ``main()`` (ground truth, config.json,
    V0 kernel.py, solution.json, README.md, .gitignore, commit ``V0: baseline (SOL reference
    wrapper)``); ``orchestrator/campaign.py`` ``Campaign._setup_baseline_sol`` +
    ``_finalize_v0_measurement`` (runtime .gitignore lines, CLAUDE.md policy block,
    ``memory/v0.json``, ``baseline_report.md``, commit ``V0: record baseline measurement``);
    ``long_horizon/store.py`` ``ensure_excluded`` (.git/info/exclude rules);
    ``long_horizon/git_episode.py`` (episode branches/worktrees, agent commits, squash
    ``promote_candidate`` and ``record_episode_outcome`` commits) and ``long_horizon/campaign.py``
    (records, archives, state) for episodes 1-3; with ``live``, episode 4 is in flight: its
    worktree is registered at ``worktree_root`` (default, as upstream:
    ``<ws.parent>/.atrex_long_horizon_worktrees/<ws.name>/e0004-...``) on branch
    ``atrex/long-e0004-...`` with a journal of two experiments and an uncommitted kernel.py edit.

    HEAD is the incumbent (the v2 kernel, real Triton, runs under ``TRITON_INTERPRET=1``);
    ``git status --porcelain`` is clean. Name ``ws`` ``WORKSPACE_NAME`` for full fidelity.
    ``git_commit_hash`` of v1/v2 is the *candidate* commit on the episode branch (what upstream
    records), not the squash commit on the main line; v0's is the V0 source commit; v3 has none.

    ``objective`` (``MEAN_SPEEDUP_OBJECTIVE``): the same campaign run by atrex v0.3.0, which
    scores by that objective (docs/releases/v0.3.0.md @ac1f588: "Performance scoring now uses
    the arithmetic mean of per-shape speedups consistently across evaluation and promotion"):
    every RESULT_JSON, verification and memory record carries ``performance_objective`` and
    ``performance_score`` (``speedup_vs_ref_geomean`` null), and episode 2's candidate is the
    one whose mean speedup wins while its geomean latency loses (``_E2_ABBA_US_BY_OBJECTIVE``).
    """
    ws = Path(ws).resolve()
    ws.mkdir(parents=True, exist_ok=True)
    root = Path(worktree_root).resolve() if worktree_root else _default_worktree_root(ws)
    campaign = _Campaign(ws, root, objective=objective)
    git = _Git()
    h = campaign.hashes

    # sol_seed.py ------------------------------------------------------------------------------
    for sub in ("memory", "plans", "profiles"):
        (ws / sub).mkdir(parents=True, exist_ok=True)
    _write_json(ws / "definition.json", definition_json())
    _write(ws / "reference.py", REFERENCE_PY)
    _write(ws / "workload.jsonl", "".join(json.dumps(row) + "\n" for row in workload_lines()))
    _write(ws / "config.json", json.dumps(CONFIG_JSON, indent=2) + "\n")
    _write(ws / "kernel.py", kernel_v0())
    _write(ws / "solution.json", json.dumps(SOLUTION_JSON, indent=2) + "\n")
    _write(ws / "test_kernel.py", TEST_KERNEL_PY)
    _write(ws / "profile_driver.py", PROFILE_DRIVER_PY)
    _write(ws / "CLAUDE.md", CLAUDE_MD_SEED)
    _write(ws / "README.md", readme_text())
    _write(ws / ".gitignore", SEED_GITIGNORE)
    git(ws, "-c", "init.defaultBranch=master", "init", "-q")
    h["v0_source"] = git.commit(
        ws,
        SUPERVISOR_COMMIT_SUBJECTS["v0_source_sol"],
        "definition.json",
        "reference.py",
        "workload.jsonl",
        "config.json",
        "kernel.py",
        "solution.json",
        "test_kernel.py",
        "profile_driver.py",
        "README.md",
        ".gitignore",
        "CLAUDE.md",
        minutes=10,
    )

    # supervisor V0: _link_runtime(), evaluator, _finalize_v0_measurement() -----------------------
    _write(ws / ".gitignore", SEED_GITIGNORE + RUNTIME_GITIGNORE_APPEND)
    _write(ws / "CLAUDE.md", CLAUDE_MD_SEED + "\n" + CLAUDE_MD_POLICY)
    _write_json(ws / "memory" / "v0.json", campaign.memory_v0())
    _write(ws / "baseline_report.md", campaign.baseline_report())
    h["v0_measure"] = git.commit(
        ws,
        SUPERVISOR_COMMIT_SUBJECTS["v0_measurement"],
        "memory/v0.json",
        "baseline_report.md",
        "CLAUDE.md",
        ".gitignore",
        minutes=32,
    )
    exclude = Path(git(ws, "rev-parse", "--git-path", "info/exclude"))
    exclude = exclude if exclude.is_absolute() else ws / exclude
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    _write(
        exclude,
        text + ("" if not text or text.endswith("\n") else "\n") + "\n".join(INFO_EXCLUDE_RULES) + "\n",
    )

    # episode 1: fast, five trials, the best one re-selected, promoted ----------------------------
    tree = _open_worktree(git, campaign, 1, orchestrator=orchestrator)
    for trial, source in enumerate(E1_TRIAL_KERNELS, start=1):
        hypothesis = campaign.experiments(1)[trial - 1]["hypothesis"]
        _write(tree / "plans" / f"v1_trial{trial}_plan.md", f"# v1 trial {trial}\n\n{hypothesis}\n")
        _write(tree / "kernel.py", source)
        h[f"e1_trial{trial}"] = git.commit(
            tree,
            AGENT_COMMIT_SUBJECTS["fast_trial"].format(version=1, trial=trial),
            "kernel.py",
            minutes=60 + 20 * trial,
        )
    _write(tree / "kernel.py", KERNEL_V1)
    h["e1_candidate"] = git.commit(
        tree, AGENT_COMMIT_SUBJECTS["fast_selection"].format(version=1), "kernel.py", minutes=170
    )
    _archive(git, campaign, 1, h["e1_candidate"])
    h["e1_promote"] = _promote(git, campaign, 1, minutes=178)

    # episode 2: full, ABBA-verified, promoted ------------------------------------------------------
    tree = _open_worktree(git, campaign, 2, orchestrator=orchestrator)
    _write(tree / "profiles" / "episode_2" / "summary.md", "# ncu summary (v1 incumbent)\n\nlaunch bound\n")
    _write(tree / "plans" / "v2_plan.md", "# v2 plan\n\nMulti-row tiles.\n")
    _write(tree / "kernel.py", KERNEL_E2_CHECKPOINT)
    h["e2_checkpoint"] = git.commit(tree, "v2: checkpoint 8 rows per program", "kernel.py", minutes=292)
    _write(tree / "kernel.py", KERNEL_V2)
    h["e2_candidate"] = git.commit(
        tree, AGENT_COMMIT_SUBJECTS["full_candidate"].format(version=2), "kernel.py", minutes=332
    )
    _archive(git, campaign, 2, h["e2_candidate"])
    h["e2_promote"] = _promote(git, campaign, 2, minutes=352)

    # episode 3: full, pivot: outcome recorded, incumbent unchanged --------------------------------
    tree = _open_worktree(git, campaign, 3, orchestrator=orchestrator)
    _write(tree / "plans" / "v3_plan.md", "# v3 plan\n\nRestructure the row reduction.\n")
    _write(tree / "kernel.py", KERNEL_E3_CHECKPOINT)
    h["e3_checkpoint"] = git.commit(tree, "v3: checkpoint split-row reduction", "kernel.py", minutes=512)
    _archive(git, campaign, 3, h["e3_checkpoint"])
    _write_json(ws / "memory" / "v3.json", campaign.memory_pivot())
    h["e3_outcome"] = git.commit(
        ws,
        SUPERVISOR_COMMIT_SUBJECTS["outcome"].format(version=3, episode=3, status="pivot"),
        "memory/v3.json",
        minutes=585,
    )

    for episode in (1, 2, 3):  # EpisodeWorktree.remove(): the branch stays
        git(ws, "worktree", "remove", "--force", str(campaign.worktree(episode)))

    campaign.write_runtime_state(live=live, orchestrator=orchestrator)
    if live:  # episode 4 in flight: journal in its worktree, uncommitted kernel edit
        tree = _open_worktree(git, campaign, 4, orchestrator=orchestrator)
        _write_json(tree / RUNTIME_DIR / "journal.json", campaign.journal(4))
        _write(tree / "kernel.py", KERNEL_E4_WIP)
    return ws


def build_plain_git_workspace(ws: Path) -> Path:
    """kernel.py + memory/ committed by plain git with atrex-style messages, and nothing the
    supervisor owns: no ``.atrex_long_horizon/``, no ``.orchestrator_*.json``, no
    ``memory/live.json``, no ``atrex/long-*`` branches, no .git/info/exclude rules. Records use
    today's fields (the shapes ``session_io._record_local_test_result`` writes) and cite real
    commits. For "not supervisor-owned" tests; returns ``ws``."""
    ws = Path(ws).resolve()
    ws.mkdir(parents=True, exist_ok=True)
    git = _Git()
    _write(ws / "README.md", readme_text())
    _write(ws / ".gitignore", "__pycache__/\n*.pyc\n")
    hashes = []
    for version, (source, lat) in enumerate(
        ((kernel_v0(), _V0_US), (KERNEL_V1, _E1_TRIAL_US[1]), (KERNEL_V2, (2.70, 2.77, 3.03)))
    ):
        _write(ws / "kernel.py", source)
        message = "V0: baseline kernel" if version == 0 else f"v{version}: kernel candidate"
        paths = ("kernel.py", "README.md", ".gitignore") if version == 0 else ("kernel.py",)
        if version == 0:
            git(ws, "-c", "init.defaultBranch=master", "init", "-q")
        hashes.append(git.commit(ws, message, *paths, minutes=10 + 60 * version))
        result = sol_result(lat)
        record = {
            "version": f"v{version}",
            "masked": False,
            "timestamp": _ts(20 + 60 * version),
            "performance": {
                "latency_us": result["latency_us_geomean"],
                "latency_us_geomean": result["latency_us_geomean"],
                "latency_us_arith_mean": result["latency_us_arith_mean"],
                "latency_us_by_shape": result["latency_us_by_shape"],
                "speedup_vs_ref_geomean": result["speedup_vs_ref_geomean"],
            },
            "correctness": {
                "status": "PASS",
                "max_abs_err": result["max_abs_err"],
                "max_rel_err": result["max_rel_err"],
            },
            "quality_gate": {"result": "PASS", "failure_reason": None},
            "optimization": {
                "action_category": "baseline" if version == 0 else "multi_row_tiling",
                "action_description": "hand-written Triton kernel" if version else "reference wrapper",
            },
            "git_commit_hash": hashes[-1],
        }
        _write_json(ws / "memory" / f"v{version}.json", record)
        label = "V0: record baseline measurement" if version == 0 else f"v{version}: record measurement"
        git.commit(ws, label, f"memory/v{version}.json", minutes=20 + 60 * version)
    return ws


# ───────────────────────────── JSON Schemas of what upstream writes ─────────────────────────────
# upstream's reference/v_iteration.schema.json is a fill-in template (placeholder strings, no
# "type"/"properties"), not a JSON Schema; these encode the writers' actual types instead.

_NUM_OR_NULL = {"type": ["number", "null"]}
_STR_OR_NULL = {"type": ["string", "null"]}
_SHA = {"type": "string", "pattern": "^[0-9a-f]{40}$"}
_SHA_OR_NULL = {"type": ["string", "null"], "pattern": "^[0-9a-f]{40}$"}
_LATENCY_MAP = {"type": "object", "additionalProperties": {"type": "number", "exclusiveMinimum": 0}}
TERMINAL_STATES = ("candidate_ready", "pivot", "blocked")
OUTCOME_STATUSES = (*TERMINAL_STATES, "invalid_handoff", "interrupted")

RESULT_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": sorted(RESULT_KEYS),
    "additionalProperties": False,
    "properties": {
        "total": {"type": "integer"},
        "passed": {"type": "integer"},
        "all_pass": {"type": "boolean"},
        "failures": {"type": "array", "items": {"type": "string"}},
        "latency_us_by_shape": _LATENCY_MAP,
        "latency_us_geomean": {"type": "number"},
        "latency_us_arith_mean": {"type": "number"},
        "speedup_vs_ref_geomean": {"type": "number"},
        "max_abs_err": {"type": "number"},
        "max_rel_err": {"type": "number"},
    },
}

EXPERIMENT_SCHEMA: dict[str, Any] = {  # one journal experiment (agent-authored keys + timestamp)
    "type": "object",
    "minProperties": 1,
    "required": ["timestamp"],
    "properties": {
        k: {"type": "string"}
        for k in ("name", "hypothesis", "change", "evidence", "result", "decision", "timestamp")
    },
}

MEMORY_RECORD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": [
        "version",
        "masked",
        "timestamp",
        "performance",
        "correctness",
        "quality_gate",
        "git_commit_hash",
    ],
    "properties": {
        "version": {"type": "string", "pattern": r"^v\d+$"},
        "masked": {"type": "boolean"},
        "timestamp": {"type": "string"},
        "performance": {
            "type": "object",
            "required": ["latency_us", "latency_us_geomean", "latency_us_by_shape", "speedup_vs_ref_geomean"],
            "properties": {
                "latency_us": _NUM_OR_NULL,
                "latency_us_geomean": _NUM_OR_NULL,
                "latency_us_arith_mean": _NUM_OR_NULL,
                "latency_us_by_shape": _LATENCY_MAP,
                "measurement_scope": {"const": "real_evaluator_shapes"},
                "shape_ids_are_opaque": {"type": "boolean"},
                "measurement_status": {"enum": ["complete", "incomplete", "not_evaluated_or_incomplete"]},
                "measured_shape_count": {"type": "integer"},
                "expected_shape_count": {"type": ["integer", "null"]},
                "shape_measurement_repeats": {"type": "integer"},
                "measurement_subject": {"enum": ["candidate", "episode_head", "incumbent", "unavailable"]},
                "measurement_source": {
                    "enum": [
                        "episode_evaluator_result",
                        "authoritative_verification",
                        "canonical_incumbent_carry_forward",
                        "none",
                    ]
                },
                "comparison_method": {
                    "enum": ["single_candidate_vs_canonical_incumbent", "same_allocation_abba"]
                },
                "carried_from_version": {"type": ["string", "null"], "pattern": r"^v\d+$"},
                "speedup_vs_ref_geomean": _NUM_OR_NULL,
                "tflops_peak_utilization_pct": _NUM_OR_NULL,
                "bandwidth_peak_utilization_pct": _NUM_OR_NULL,
                "authoritative_improvement_pct": _NUM_OR_NULL,
            },
        },
        "optimization": {"type": "object", "properties": {"action_category": {"type": "string"}}},
        "profile_evidence": {"type": "object"},
        "experience": {
            "type": "object",
            "required": ["experiment_count", "recorded_experiment_count", "experiments"],
            "properties": {
                "experiment_count": {"type": "integer"},
                "recorded_experiment_count": {"type": "integer"},
                "experiments": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["index"],
                        "properties": {
                            "index": {"type": "integer"},
                            **{
                                k: {"type": "string"}
                                for k in (
                                    "name",
                                    "hypothesis",
                                    "change",
                                    "evidence",
                                    "result",
                                    "decision",
                                    "timestamp",
                                    "details",
                                )
                            },
                        },
                    },
                },
            },
        },
        "correctness": {
            "type": "object",
            "required": ["status"],
            "properties": {
                "status": {"enum": ["PASS", "FAIL", "UNKNOWN", "TIMEOUT_FAIL"]},
                "max_abs_err": _NUM_OR_NULL,
                "max_rel_err": _NUM_OR_NULL,
            },
        },
        "quality_gate": {
            "type": "object",
            "required": ["result", "failure_reason"],
            "properties": {
                "result": {"enum": ["PASS", "FAIL", "TIMEOUT_FAIL"]},
                "failure_reason": _STR_OR_NULL,
            },
        },
        "open_directions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["direction", "rationale"],
                "properties": {"direction": {"type": "string"}, "rationale": {"type": "string"}},
            },
        },
        "git_commit_hash": _SHA_OR_NULL,
        "long_horizon": {
            "type": "object",
            "required": ["status", "mode", "fast_trials"],
            "properties": {
                "status": {"enum": list(OUTCOME_STATUSES)},
                "mode": {"enum": ["fast", "full"]},
                "verification": {"enum": ["single_evaluator", "abba"]},
                "candidate_commit": _SHA_OR_NULL,
                "fast_trials": {"type": ["integer", "null"]},
            },
        },
    },
}

JOURNAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "schema_version",
        "episode",
        "memory_version",
        "base_commit",
        "episode_branch",
        "state",
        "experiments",
        "outcome",
        "created_at",
        "finalized_at",
    ],
    "properties": {
        "schema_version": {"const": 1},
        "episode": {"type": "integer"},
        "memory_version": {"type": ["integer", "null"]},
        "base_commit": _SHA,
        "episode_branch": {"type": "string", "pattern": r"^atrex/long-e\d{4}-[0-9a-f]{8}$"},
        "state": {"enum": ["in_progress", *TERMINAL_STATES]},
        "experiments": {"type": "array", "items": EXPERIMENT_SCHEMA},
        "outcome": {
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["summary", "next_directions"],
                    "properties": {
                        "summary": {"type": "string", "minLength": 1},
                        "next_directions": {"type": "array", "items": {"type": "string"}},
                    },
                },
            ]
        },
        "created_at": {"type": "string"},
        "finalized_at": _STR_OR_NULL,
        "candidate_commit": _SHA_OR_NULL,
    },
}

LIVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "schema_version",
        "canonical",
        "canonical_memory_recorded",
        "note",
        "version",
        "episode",
        "phase",
        "journal_state",
        "experiment_count",
        "latest_experiment",
        "outcome",
        "candidate_commit",
        "base_commit",
        "episode_branch",
        "created_at",
        "updated_at",
        "canonical_memory",
        "accepted",
    ],
    "properties": {
        "schema_version": {"const": "atrex_long_horizon_live_v1"},
        "canonical": {"const": False},
        "canonical_memory_recorded": {"type": "boolean"},
        "note": {"type": "string"},
        "version": {"type": ["string", "null"], "pattern": r"^v\d+$"},
        "episode": {"type": ["integer", "null"]},
        "phase": {"type": "string"},
        "journal_state": {"enum": ["in_progress", *TERMINAL_STATES]},
        "experiment_count": {"type": "integer"},
        "latest_experiment": {"oneOf": [{"type": "null"}, EXPERIMENT_SCHEMA]},
        "outcome": {"type": ["object", "null"]},
        "candidate_commit": _STR_OR_NULL,
        "base_commit": _STR_OR_NULL,
        "episode_branch": _STR_OR_NULL,
        "created_at": _STR_OR_NULL,
        "updated_at": {"type": "string"},
        "canonical_memory": _STR_OR_NULL,
        "accepted": {"type": ["boolean", "null"]},
    },
}

ATTEMPT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "episode",
        "version",
        "mode",
        "status",
        "accepted",
        "violation",
        "base_commit",
        "episode_branch",
        "candidate_commit",
        "summary",
        "next_directions",
    ],
    "properties": {
        "episode": {"type": "integer"},
        "version": {"type": "integer"},
        "mode": {"enum": ["fast", "full"]},
        "fast_trials": {"type": ["integer", "null"]},
        "status": {"enum": list(OUTCOME_STATUSES)},
        "accepted": {"type": "boolean"},
        "violation": _STR_OR_NULL,
        "base_commit": _SHA,
        "episode_branch": {"type": "string"},
        "episode_head": _SHA,
        "candidate_commit": _SHA_OR_NULL,
        "changed_paths": {"type": "array", "items": {"type": "string"}},
        "session_id": _STR_OR_NULL,
        "resume_count": {"type": "integer"},
        "tokens": {"type": "integer"},
        "verification": {"type": ["object", "null"]},
        "telemetry": {"type": "object"},
        "promotion_commit": _SHA,
        "outcome_commit": _SHA,
    },
}

EVIDENCE_SCHEMA: dict[str, Any] = {  # memory/long_horizon_eNNNN.json
    "allOf": [
        ATTEMPT_SCHEMA,
        {
            "type": "object",
            "required": ["journal"],
            "properties": {"journal": JOURNAL_SCHEMA, "promotion_commit": False, "outcome_commit": False},
        },
    ],
}

STATE_SCHEMA: dict[str, Any] = {  # .atrex_long_horizon/state.json
    "type": "object",
    "additionalProperties": False,
    "required": [
        "episodes",
        "accepted",
        "rejected",
        "pivoted",
        "blocked",
        "protocol_failures",
        "interrupted",
        "tokens",
        "consecutive_without_promotion",
        "attempts",
    ],
    "properties": {
        **{
            k: {"type": "integer", "minimum": 0}
            for k in (
                "episodes",
                "accepted",
                "rejected",
                "pivoted",
                "blocked",
                "protocol_failures",
                "interrupted",
                "tokens",
                "consecutive_without_promotion",
            )
        },
        "attempts": {"type": "array", "items": ATTEMPT_SCHEMA},
    },
}

ACTIVE_EPISODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "episode",
        "memory_version",
        "base_commit",
        "episode_branch",
        "worktree",
        "mode",
        "fast_trials",
        "phase",
    ],
    "properties": {
        "episode": {"type": "integer"},
        "memory_version": {"type": "integer"},
        "base_commit": _SHA,
        "episode_branch": {"type": "string"},
        "worktree": {"type": "string"},
        "mode": {"enum": ["fast", "full"]},
        "fast_trials": {"type": ["integer", "null"]},
        "phase": {"type": "string"},
    },
}

ORCHESTRATOR_STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["stall"],
    "properties": {"stall": {"type": "integer", "minimum": 0}},
}

EVALUATION_LINE_SCHEMA: dict[str, Any] = {  # one line of episode_runtime/evaluations.jsonl
    "type": "object",
    "required": ["schema_version", "timestamp", "gateway_kind", "job_id", "kernel_sha256", "result"],
    "properties": {
        "schema_version": {"const": 2},
        "kernel_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "result": RESULT_JSON_SCHEMA,
    },
}
