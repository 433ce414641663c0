"""Tiny workspaces for harness tests: a vector-add reference and kernels that misbehave."""

from __future__ import annotations

from pathlib import Path

from kernelscope.protocol.bench import BenchError, BenchResult

REFERENCE = """
import torch

CPU_CONFIGS = [{"name": "n=300", "n": 300, "dtype": "float32"}, {"name": "n=1000", "n": 1000, "dtype": "float32"}]
CONFIGS = CPU_CONFIGS


def make_inputs(config, seed, device):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(config["n"], generator=g).to(device), torch.randn(config["n"], generator=g).to(device))


def reference(x, y):
    return x + y


def bytes_moved(config):
    return 12 * config["n"]
"""

HEADER = """
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK=256)
    return out
"""

KERNELS: dict[str, str] = {
    "good": HEADER + "\ndef kernel_fn(x, y):\n    return add(x, y)\n",
    "syntax_error": "import triton\n\ndef kernel_fn(x, y:\n    return x\n",
    "raises": HEADER + "\ndef kernel_fn(x, y):\n    raise ValueError('block size must divide n')\n",
    "triton_error": HEADER.replace("tl.load(x_ptr + offs, mask=mask) +", "tl.no_such_op(x_ptr) +")
    + "\ndef kernel_fn(x, y):\n    return add(x, y)\n",
    "abort": "import os\n\ndef kernel_fn(x, y):\n    os.abort()\n",
    "segfault": "import ctypes\n\ndef kernel_fn(x, y):\n    ctypes.string_at(0)\n",
    "hang": "import time\n\ndef kernel_fn(x, y):\n    while True:\n        time.sleep(0.1)\n",
    "oom": "import torch\n\ndef kernel_fn(x, y):\n    return torch.empty(2**45, dtype=torch.float32)\n",
    "wrong": HEADER + "\ndef kernel_fn(x, y):\n    return add(x, y) * 1.01\n",
    "mutates_input": HEADER
    + "\ndef kernel_fn(x, y):\n    out = add(x, y)\n    x[0] += 1.0\n    return out\n",
    "aliases_input": HEADER + "\ndef kernel_fn(x, y):\n    return x.view(-1)\n",
    "nan": HEADER
    + "\ndef kernel_fn(x, y):\n    out = add(x, y)\n    out[3] = float('nan')\n    return out\n",
    "wrong_shape": HEADER + "\ndef kernel_fn(x, y):\n    return add(x, y)[:-1]\n",
    "wrong_dtype": HEADER + "\ndef kernel_fn(x, y):\n    return add(x, y).double()\n",
    "wrong_strides": HEADER
    + "\ndef kernel_fn(x, y):\n    out = add(x, y)\n    buf = torch.empty(2 * out.numel())\n    buf[::2] = out\n    return buf[::2]\n",
    "cached": HEADER
    + "\n_cache = {}\n\ndef kernel_fn(x, y):\n    if 'out' not in _cache:\n        _cache['out'] = add(x, y)\n    return _cache['out'].clone()\n",
    # Resource abuse: each would take the machine (and a daemon beside it) without caps.
    "fork_bomb": "import os, time\n\ndef kernel_fn(x, y):\n    for _ in range(100000):\n"
    "        if os.fork() == 0:\n            time.sleep(120)\n            os._exit(0)\n",
    "prints_forever": "import sys\n\ndef kernel_fn(x, y):\n    line = 'x' * 1_000_000 + '\\n'\n"
    "    while True:\n        sys.stdout.write(line)\n",
    "hoards_memory": "import time, torch\n\n_held = []\n\ndef kernel_fn(x, y):\n"
    "    _held.append(torch.ones(2**29))  # 2 GiB, every page touched\n    time.sleep(120)\n",
    "autotuned": HEADER.replace(
        "@triton.jit",
        "@triton.autotune(configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)], key=['n'])\n@triton.jit",
    )
    + "\ndef kernel_fn(x, y):\n    return add(x, y)\n",
}


def make_workspace(root: Path, kernel: str = "good", reference: str = REFERENCE) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "reference.py").write_text(reference)
    (root / "kernel.py").write_text(KERNELS[kernel])
    (root / "README.md").write_text("# t\n## Stop Conditions\n- latency <= 10 us\n")
    return root


def jobs_folder() -> tuple[str, dict[str, str]]:
    """A temp folder of this test process and an environment whose TMPDIR is it, for a daemon
    whose jobs are followed with `alive_with(folder)`: the scratch copies and the probe's files
    lie under it, so every process of a job carries it in its command line (the workspace's own
    path does not: a job runs in a copy). One per process, since tests of a file run in one."""
    import atexit
    import os
    import shutil
    import tempfile

    from tests.conftest import private_user_env

    folder = tempfile.mkdtemp(prefix="kernelscope-test-jobs-")
    atexit.register(shutil.rmtree, folder, True)
    return folder, {**private_user_env(Path(folder) / "user", os.environ), "TMPDIR": folder}


def alive_with(marker: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line mentions `marker`: a runner
    and anything it forked carry the paths of its run (its scratch copy, keeping the
    workspace's folder name, under the temp folder), not the workspace's own path."""
    from kernelscope.daemon.engine.run.child_limits import stat_fields

    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            fields = stat_fields(int(entry.name))
            if marker.encode() in cmdline and fields and fields[0] != "Z":
                pids.append(int(entry.name))
    return pids


_TRITON_BESIDE = HEADER.split("def add(x, y):")[0]
# The same abuse in files the static rules pass (a real Triton kernel beside it; processes
# started through subprocess, each carrying the job's command line so `alive_with` finds
# it): what the runtime caps must stop when the static gate cannot.
EVADING: dict[str, str] = {
    "fork_bomb": _TRITON_BESIDE + "import subprocess, sys\n\ndef kernel_fn(x, y):\n"
    "    title = open('/proc/self/cmdline').read().replace(chr(0), ' ')\n"
    "    for _ in range(100000):\n"
    "        subprocess.Popen(['sh', '-c', 'sleep 120; true', title])\n",
    "prints_forever": _TRITON_BESIDE + KERNELS["prints_forever"],
    "hoards_memory": _TRITON_BESIDE + KERNELS["hoards_memory"],
    "hang": _TRITON_BESIDE + KERNELS["hang"],
}


def bench_result(kind: str | None, status: str = "error", passed: bool = False) -> BenchResult:
    """A bench result of `status` whose error (if any) is of `kind`: what the CLI's verdict word
    and the probe lens read, without running a benchmark."""
    return BenchResult(
        status=status,  # type: ignore[arg-type]
        passed=passed,
        mode="interpreter",
        workspace="ws",
        candidate="kernel.py",
        baseline="reference",
        entry_point="",
        error=None if kind is None else BenchError(kind=kind, message="m"),  # type: ignore[arg-type]
    )
