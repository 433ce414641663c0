"""What `kernelscope bench` says about a KernelBench problem, which keeps its own file name
(KernelBench 423217d: level1/32_HardTanh.py, prompts/model_ex_add.py), not reference.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

KERNEL = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, -1.0, 1.0)
"""


def kernelbench_problem(ws: Path, name: str, body: str) -> Path:
    ws.mkdir(parents=True, exist_ok=True)
    (ws / name).write_text(body)
    (ws / "kernel.py").write_text(KERNEL)
    (ws / "README.md").write_text(
        f'# problem\n\n```kernelscope\n{{"bench": {{"reference": "{name}"}}}}\n```\n'
    )
    return ws


def bench(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("kernelscope", path=str(Path(sys.executable).parent))
    assert exe is not None
    return subprocess.run(
        [exe, "bench", "-w", str(ws), "--mode", "interpreter", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


# Level 1's HardTanh at its own size: the harness refuses it before allocating (6.44 GB inputs)
HARDTANH = """import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def forward(self, x):
        return F.hardtanh(x, min_val=-1., max_val=1.)

batch_size = 4096
dim = 393216

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
"""


def test_the_baseline_line_names_the_problem_file(tmp_path: Path) -> None:
    """Before: `baseline: the reference implementation (reference.py, ...)` for a workspace
    that has no reference.py."""
    ws = kernelbench_problem(tmp_path / "ws", "32_HardTanh.py", HARDTANH)
    run = bench(ws)
    assert "baseline: the reference implementation (32_HardTanh.py, not a recorded version)" in run.stdout
    assert "reference.py" not in run.stdout


# KernelBench's prompts/model_ex_add.py (423217d): its get_inputs() calls .cuda()
MODEL_EX_ADD = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b):
        return a + b

def get_inputs():
    a = torch.randn(1, 128).cuda()
    b = torch.randn(1, 128).cuda()
    return [a, b]

def get_init_inputs():
    return []
"""

ADD_KERNEL = """import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a + b
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="the .cuda() calls work on a GPU machine")
def test_inputs_put_on_a_missing_gpu_are_named_with_what_to_do(tmp_path: Path) -> None:
    """Before: `AssertionError: Torch not compiled with CUDA enabled` and nothing more."""
    ws = kernelbench_problem(tmp_path / "ws", "model_ex_add.py", MODEL_EX_ADD)
    (ws / "kernel.py").write_text(ADD_KERNEL)
    run = bench(ws, "--no-static-rules")
    said = run.stdout + run.stderr
    assert run.returncode != 0, said
    assert "get_inputs() in model_ex_add.py puts its tensors on a CUDA device" in said, said
    assert "build them on the CPU" in said and "drop the .cuda()" in said
