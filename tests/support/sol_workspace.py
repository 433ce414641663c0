"""Builds a SOL-ExecBench workspace the way atrex's `reference/sol_seed.py` lays one out.

The op is an RMSNorm over rows (var axis `num_rows`, const axis `hidden_size`) with a scalar
`eps` and two outputs, so the tests see multi-output destination passing, scalar inputs,
per-workload tolerances and a var axis large enough to be shrunk under the interpreter.
Ground truth (definition.json, reference.py, workload.jsonl) is written as the SOL files
are, then config.json, solution.json, kernel.py, README.md, .gitignore and the two scripts
sol_seed copies, and one git commit, as sol_seed makes. `test_kernel.py` and
`profile_driver.py` are stand-ins: atrex's real ones need the `sol-execbench` package and a
GPU, which is the point of kernelscope reading the layout itself.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

HIDDEN_SIZE = 256

REFERENCE = """import torch


@torch.no_grad()
def run(input, weight, eps):
    num_rows, hidden_size = input.shape
    assert hidden_size == 256

    x = input.to(torch.float32)
    rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    output = (x * rstd * weight.to(torch.float32)).to(input.dtype)
    return output, rstd.squeeze(-1)
"""

_TRITON_KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_rows(x_ptr, w_ptr, out_ptr, rstd_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = {VALUE}
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(rstd_ptr + row, rstd)


def run(input, weight, eps, output, rstd):
    """Destination passing: writes `output` and `rstd` in place (SOL solution contract)."""
    num_rows, hidden_size = input.shape
    _rmsnorm_rows[(num_rows,)](
        input, weight, output, rstd, hidden_size, eps, BLOCK=triton.next_power_of_2(hidden_size)
    )
'''

KERNELS = {
    "triton": _TRITON_KERNEL.replace("{VALUE}", "x * rstd * w"),
    # Forgets the weight: a wrong value in the output, far beyond any workload's tolerance.
    "wrong": _TRITON_KERNEL.replace("{VALUE}", "x * rstd"),
}

# (uuid, num_rows, eps, tolerance or None for upstream's defaults)
WORKLOADS: list[tuple[str, int, float, dict[str, float] | None]] = [
    ("3f2a9c1e-5b7d-4e02-9a61-0c8d2b4f7e13", 8192, 1e-6, {"max_atol": 1e-5, "max_rtol": 1e-5}),
    ("b81d4e70-2c3a-4f5e-8d19-6a7b0c2e9f44", 7, 1e-5, {"max_atol": 1e-4, "max_rtol": 1e-3}),
    ("5c0e7a12-9f84-4b3d-a2c6-e1d5f8093b27", 1000, 1e-6, None),
]
SAFETENSORS_UUID = "e2142798-a0ce-49dd-9eaa-72727ad69f0f"

GITIGNORE = """__pycache__/
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

TEST_KERNEL_STANDIN = '''"""Stand-in for atrex's test_kernel.py, which runs the `sol-execbench` evaluator."""
import shutil
import sys

if __name__ == "__main__":
    if shutil.which("sol-execbench") is None:
        sys.exit("sol-execbench CLI not found on PATH")
    sys.exit("this stand-in does not run the evaluator")
'''

PROFILE_DRIVER_STANDIN = '''"""Stand-in for atrex's profile_driver.py (the external profiling entry)."""
'''


def definition(dtype: str = "float32") -> dict[str, object]:
    return {
        "name": f"rmsnorm_h{HIDDEN_SIZE}",
        "op_type": "rmsnorm",
        "description": "Row-wise RMS normalization with the row's rstd as a second output.",
        "axes": {
            "num_rows": {"type": "var", "description": "Rows to normalize."},
            "hidden_size": {"type": "const", "value": HIDDEN_SIZE, "description": None},
        },
        "custom_inputs_entrypoint": None,
        "inputs": {
            "input": {"shape": ["num_rows", "hidden_size"], "dtype": dtype, "description": None},
            "weight": {"shape": ["hidden_size"], "dtype": dtype, "description": None},
            "eps": {"shape": None, "dtype": "float32", "description": "Epsilon."},
        },
        "outputs": {
            "output": {"shape": ["num_rows", "hidden_size"], "dtype": dtype, "description": None},
            "rstd": {"shape": ["num_rows"], "dtype": "float32", "description": None},
        },
        "constraints": [],
        "reference": REFERENCE,
    }


def _workload(uuid: str, rows: int, eps: float, tolerance: dict[str, float] | None) -> dict[str, object]:
    line: dict[str, object] = {
        "uuid": uuid,
        "axes": {"num_rows": rows},
        "inputs": {
            "input": {"type": "random"},
            "weight": {"type": "random"},
            "eps": {"type": "scalar", "value": eps},
        },
    }
    if tolerance is not None:
        line["tolerance"] = tolerance
    return line


def v0_kernel(defn: dict[str, object]) -> str:
    """What sol_seed.py writes as V0: the reference renamed `_ref` and a DPS wrapper."""
    inputs, outputs = list(defn["inputs"]), list(defn["outputs"])  # type: ignore[call-overload]
    body = "    if not isinstance(_out, (tuple, list)):\n        _out = (_out,)\n"
    body += "".join(f"    {name}[:] = _out[{i}]\n" for i, name in enumerate(outputs))
    reference = re.sub(r"(?m)^def run\(", "def _ref(", REFERENCE)
    return (
        "# V0 baseline: self-contained destination-passing-style (DPS) wrapper around the\n"
        "# verbatim SOL reference logic.\n"
        f"{reference}\n\n"
        f"def run({', '.join(inputs + outputs)}):\n"
        f"    _out = _ref({', '.join(inputs)})\n{body}"
    )


def readme(name: str, defn: dict[str, object], framework: str, platform: str, workloads: int) -> str:
    """The README sol_seed.py writes (its `_readme`), section for section."""
    return (
        f"# kernel_opt_{name}\n\n"
        f"Profile-driven optimization of SOL-ExecBench op **{defn['name']}**.\n\n"
        f"{str(defn.get('description', '')).strip()}\n\n"
        "## Goal\n\n"
        "**Minimize the GEOMEAN of per-workload kernel latency** "
        "(`performance.latency_us` in `memory/v<N>.json`), while keeping ALL workloads "
        "correct under their own SOL tolerances. A version that passes `test_kernel.py` "
        "is directly submittable to SOL-ExecBench.\n\n"
        "## Config\n\n"
        f"- Target platform: `{platform}`\n"
        f"- Target framework: `{framework}` (V0 starts as PyTorch; migrate the body of `run()` in `kernel.py`)\n"
        "- gpu_wiki_path: ``\n"
        f"- Workloads (shape set): {workloads} in `workload.jsonl` (ground truth — do NOT edit)\n\n"
        "## Ground truth (immutable)\n\n"
        "- `definition.json`, `reference.py`, `workload.jsonl` — copied verbatim from the op dir.\n"
        "- `test_kernel.py` — the SOL evaluator harness (immutable methodology).\n\n"
        "## Workflow\n\n"
        "- Edit `kernel.py` only (DPS `run()`; args = definition.inputs then definition.outputs).\n"
        "- When migrating framework, also update `solution.json` `spec.languages` / `dependencies`.\n"
        "- Validate + bench every iteration with `python test_kernel.py --version v<N>`.\n"
    )


def make_sol_workspace(
    path: Path,
    kernel: str = "triton",
    *,
    safetensors: bool = False,
    dtype: str = "float32",
    name: str = "rmsnorm",
) -> Path:
    """A committed SOL-ExecBench workspace at `path`. `kernel`: "triton" (honest), "wrong", or
    "v0" (sol_seed's PyTorch wrapper). `safetensors` adds a fourth workload whose `weight` comes
    from a safetensors blob, as FlashInfer-trace workloads do."""
    path.mkdir(parents=True, exist_ok=True)
    for sub in ("memory", "plans", "profiles"):
        (path / sub).mkdir(exist_ok=True)
    defn = definition(dtype)
    lines = [_workload(*w) for w in WORKLOADS]
    if safetensors:
        blob = f"blob/workloads/rmsnorm/rmsnorm_h{HIDDEN_SIZE}_{SAFETENSORS_UUID[:8]}.safetensors"
        line = _workload(SAFETENSORS_UUID, 64, 1e-6, None)
        line["inputs"]["weight"] = {"type": "safetensors", "path": blob, "tensor_key": "weight"}  # type: ignore[index]
        lines.append(line)
    (path / "definition.json").write_text(json.dumps(defn, indent=2) + "\n", encoding="utf-8")
    (path / "reference.py").write_text(REFERENCE, encoding="utf-8")
    (path / "workload.jsonl").write_text("".join(json.dumps(w) + "\n" for w in lines), encoding="utf-8")
    bench_config = {"seed": 200, "warmup_runs": 10, "iterations": 50, "benchmark_reference": True}
    (path / "config.json").write_text(json.dumps(bench_config, indent=2) + "\n", encoding="utf-8")
    framework = "pytorch" if kernel == "v0" else "triton"
    solution = {
        "name": f"{name}_v0_pytorch" if kernel == "v0" else f"{name}_v1_triton",
        "definition": defn["name"],
        "author": "atrex-aka",
        "description": f"target framework: {framework}",
        "spec": {
            "languages": [framework],
            "target_hardware": ["B200", "LOCAL"],
            "entry_point": "kernel.py::run",
            "dependencies": ["torch"] if kernel == "v0" else ["torch", "triton"],
            "destination_passing_style": True,
        },
        "sources": [{"path": "kernel.py"}],
    }
    (path / "solution.json").write_text(json.dumps(solution, indent=2) + "\n", encoding="utf-8")
    (path / "kernel.py").write_text(v0_kernel(defn) if kernel == "v0" else KERNELS[kernel], encoding="utf-8")
    (path / "test_kernel.py").write_text(TEST_KERNEL_STANDIN, encoding="utf-8")
    (path / "profile_driver.py").write_text(PROFILE_DRIVER_STANDIN, encoding="utf-8")
    (path / "README.md").write_text(readme(name, defn, framework, "B200", len(lines)), encoding="utf-8")
    (path / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    git = ["git", "-c", "user.email=gpu-kernel-optimizer@local", "-c", "user.name=GPU Kernel Optimizer"]
    subprocess.run([*git, "init", "-q"], cwd=path, check=True)
    tracked = [
        "definition.json", "reference.py", "workload.jsonl", "config.json", "kernel.py", "solution.json",
        "test_kernel.py", "profile_driver.py", "README.md", ".gitignore",
    ]  # fmt: skip
    subprocess.run([*git, "add", *tracked], cwd=path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "V0: baseline (SOL reference wrapper)"], cwd=path, check=True)
    return path
