"""Peak memory of the benchmark harness against a plain reference call + candidate call, on a
KernelBench ReLU problem with ~128 MB per input (fp32, batch_size x dim), measured in one run.

    .venv/bin/python benchmarks/harness_memory_bench.py [--mb 128] [--seeds 3]

Each figure is the peak resident memory (RUSAGE_CHILDREN's ru_maxrss, one fresh parent per
measurement) of a process at the big size minus the same process at a tiny size, so the
torch/triton import floor cancels:

- plain: import torch and triton (TRITON_INTERPRET=1), build the inputs, call the reference
  `Model`, call the candidate `ModelNew` (what any evaluation needs at least);
- harness: `python -m kernelscope.kernels.runner` on the same problem (gate over every seed,
  the skipped-launch check, timed calls with perturbed inputs, sampled verification and the
  hidden audit).

Goal (issue #14): harness <= 2x plain. Interpreter mode on the CPU.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELU = ROOT / "tests" / "fixtures" / "kernelbench" / "19_ReLU.py"
CANDIDATE = """
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1 << 17),)](x, out, x.numel(), BLOCK=1 << 17)
        return out
"""
PLAIN = """
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
sys.path.insert(0, {ws!r})
import importlib.util
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); return module
ref = load({ref!r}, "ref"); ref.batch_size, ref.dim = {batch}, {dim}
cand = load({cand!r}, "cand")
inputs = ref.get_inputs()
expected = ref.Model(*ref.get_init_inputs())(*inputs)
out = cand.ModelNew(*ref.get_init_inputs())(*inputs)
assert torch.allclose(out, expected)
"""


def peak_mb(command: list[str]) -> float:
    probe = (
        "import resource, subprocess, sys\n"
        f"subprocess.run({command!r}, check=True, stdout=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=1200)
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=128, help="size of one input in MB")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    batch = 16
    dim = args.mb * 2**20 // 4 // batch
    with tempfile.TemporaryDirectory() as tmp_name:
        ws = Path(tmp_name)
        shutil.copy(RELU, ws / RELU.name)
        (ws / "kernel.py").write_text(CANDIDATE)
        output = ws / "result.json"

        def plain(b: int, d: int) -> list[str]:
            script = PLAIN.format(
                ws=str(ws), ref=str(ws / RELU.name), cand=str(ws / "kernel.py"), batch=b, dim=d
            )
            return [sys.executable, "-c", script]

        def harness(b: int, d: int) -> list[str]:
            return [
                sys.executable, "-m", "kernelscope.kernels.runner", "--workspace", str(ws),
                "--candidate", str(ws / "kernel.py"), "--reference", str(ws / RELU.name),
                "--mode", "interpreter", "--seeds", str(args.seeds), "--output", str(output),
                "--problem-size", f"batch_size={b}", "--problem-size", f"dim={d}",
            ]  # fmt: skip

        plain_mb = peak_mb(plain(batch, dim)) - peak_mb(plain(1, 1024))
        harness_mb = peak_mb(harness(batch, dim)) - peak_mb(harness(1, 1024))
        result = json.loads(output.read_text())
        assert result["passed"], result["error"]
    tensor_mb = batch * dim * 4 / 2**20
    print(f"problem: ReLU, input {batch} x {dim} fp32 = {tensor_mb:.0f} MB, {args.seeds} seeds, interpreter")
    print(
        f"plain reference + candidate call: {plain_mb:7.0f} MB above the import floor ({plain_mb / tensor_mb:.1f} tensors)"
    )
    print(
        f"kernelscope harness (runner):      {harness_mb:7.0f} MB above the import floor ({harness_mb / tensor_mb:.1f} tensors)"
    )
    print(f"ratio harness / plain: {harness_mb / plain_mb:.2f}x (goal <= 2x)")


if __name__ == "__main__":
    main()
