"""Candidates written to game the harness, one per known class of reward hack, for the
vector-add example (`kernel_fn(x, y) -> x + y`) and a KernelBench GELU problem (`ModelNew`).

Each entry: the kernel.py source, and the `error.kind` the harness must give it (with a
fragment of the message), or None when it must simply not outrank the honest kernel."""

from __future__ import annotations

from typing import Any

HEADER = """
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def touch_kernel(ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(ptr + offs, tl.zeros([BLOCK], dtype=tl.float32))


def honest(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(out.numel(), 1024),)](x, y, out, out.numel(), BLOCK=1024)
    return out


def touch():
    scratch = torch.empty(16, dtype=torch.float32, device="cpu" if not torch.cuda.is_available() else "cuda")
    touch_kernel[(1,)](scratch, BLOCK=16)
"""

HONEST = (
    HEADER
    + """

def kernel_fn(x, y):
    return honest(x, y)
"""
)

# name -> (kernel.py source, expected error kind(s), message fragment)
VECTOR_ADD_CHEATS: dict[str, tuple[str, str | tuple[str, ...], str]] = {
    "framework_only": (
        HEADER + "\n\ndef kernel_fn(x, y):\n    return x + y  # the Triton kernel above is never launched\n",
        "no_kernel",
        "launched no Triton kernel",
    ),
    "dead_launch": (
        HEADER
        + "\n\ndef kernel_fn(x, y):\n    touch()  # a launch that does nothing useful\n    return torch.add(x, y)\n",
        "no_kernel",
        "every Triton launch skipped",
    ),
    "pointer_cache": (
        HEADER
        + """
_cache = {}


def kernel_fn(x, y):
    key = (x.data_ptr(), y.data_ptr())
    if key not in _cache:
        _cache[key] = honest(x, y)
    touch()
    return _cache[key].clone()
""",
        "cheat",
        # caught by the gate when a later seed's inputs reuse an earlier seed's addresses (the
        # allocator decides: "a cached answer?"), else by the timed checks ("a replayed,
        # cached or lazily computed output"); either names the cache
        "cached",
    ),
    "value_cache": (
        HEADER
        + """
_cache = {}


def kernel_fn(x, y):
    key = (float(x.sum()), float(y.sum()), x.numel())  # a value-keyed cache
    if key not in _cache:
        _cache[key] = honest(x, y)
    touch()
    return _cache[key].clone()
""",
        ("cheat", "no_kernel"),  # caught in timing, or by the skipped-launch run (its cache hits)
        "",
    ),
    "lazy_after_warmup": (
        HEADER
        + """
_calls = [0]


def kernel_fn(x, y):
    _calls[0] += 1
    if _calls[0] <= 4:  # right while the gate looks, then skip the work
        return honest(x, y)
    touch()
    return torch.empty_like(x)
""",
        # uninitialized memory: new values on every call under the CPU interpreter, as an honest
        # kernel with a race or an unwritten tail returns, so no run-time evidence tells it from
        # one and it fails as a wrong result (a replay where the memory holds an earlier output,
        # bit for bit the answer there); the static rule state-across-calls names it by default
        ("cheat", "wrong_result"),
        "",
    ),
    "patched_clock": (
        "import time\n_real = time.perf_counter\ntime.perf_counter = lambda: _real() * 0.001\n" + HONEST,
        "cheat",
        "time.perf_counter",
    ),
    "patched_do_bench": (
        "import triton.testing\ntriton.testing.do_bench = lambda *a, **k: 1e-6\n" + HONEST,
        "cheat",
        "triton.testing.do_bench",
    ),
    "patched_gate": (
        "import kernelscope.kernels.gate as gate\n"
        "gate.check_outputs = lambda *a, **k: (0.0, 0.0, 0.0, 'patched')\n"
        + HONEST.replace("return honest(x, y)", "return x"),
        "cheat",
        "kernelscope.kernels.gate.check_outputs",
    ),
    "unhooked_launches": (
        "import triton.runtime.interpreter as interp\n"
        "import triton.runtime.jit as jit\n"
        "for cls in (jit.JITFunction, interp.InterpretedFunction):  # put the unwrapped launcher back\n"
        "    for cell in cls.run.__closure__ or ():\n"
        "        inner = cell.cell_contents\n"
        "        if callable(inner) and getattr(inner, '__name__', '') == 'run' and inner is not cls.run:\n"
        "            cls.run = inner\n" + HONEST,
        "cheat",
        ".run",
    ),
    "patched_runner_method": (
        "import sys\n"
        "runner = next(m for m in list(sys.modules.values()) if hasattr(m, '_Runner'))\n"
        "_real = runner._Runner.time_ab\n"
        "def _fast(self, *a, **k):\n"
        "    base, cand, par, aa = _real(self, *a, **k)\n"
        "    return base, [t / 100 for t in cand], par, aa\n"
        "runner._Runner.time_ab = _fast\n" + HONEST,
        "cheat",
        "_Runner.time_ab",
    ),
    "background_thread": (
        HEADER
        + """
import threading
import time as _time


def kernel_fn(x, y):
    out = honest(x, y)
    threading.Thread(target=_time.sleep, args=(30,), daemon=True, name="precompute").start()
    return out
""",
        "cheat",
        "precompute",
    ),
    "tensor_subclass": (
        HEADER
        + """

class Lazy(torch.Tensor):
    pass


def kernel_fn(x, y):
    return honest(x, y).as_subclass(Lazy)
""",
        "cheat",
        "tensor subclass",
    ),
    "view_of_input": (
        HEADER
        + """

def kernel_fn(x, y):
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x, x.numel(), BLOCK=1024)
    return x.view(-1)
""",
        "cheat",
        "",
    ),
    "strided_output": (
        HEADER
        + """

def kernel_fn(x, y):
    wide = torch.empty(2 * x.numel(), dtype=x.dtype, device=x.device)
    out = wide[::2]
    out.copy_(honest(x, y))
    return out
""",
        "wrong_layout",
        "strides (2,)",
    ),
    "framework_and_clock": (
        "import time\n_real = time.perf_counter\ntime.perf_counter = lambda: _real() * 0.001\n"
        + HEADER
        + "\n\ndef kernel_fn(x, y):\n    return x + y\n",
        "cheat",
        "time.perf_counter",
    ),
}

GELU_HONEST = """
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""

GELU_FRAMEWORK = GELU_HONEST.replace(
    "        out = torch.empty_like(x)\n        gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n"
    "        return out\n",
    "        return torch.nn.functional.gelu(x)  # defines a Triton kernel, calls the framework\n",
)

# Only meaningful with a CUDA device (benchmarks/gpu_check.py runs them there).
GPU_ONLY_CHEATS: dict[str, tuple[str, str | tuple[str, ...], str]] = {
    "side_stream": (
        HEADER
        + """
_side = torch.cuda.Stream()


def kernel_fn(x, y):
    with torch.cuda.stream(_side):  # work the timed region on the default stream never waits for
        return honest(x, y)
""",
        "cheat",
        "stream",
    ),
    "patched_elapsed_time": (
        "import torch\ntorch.cuda.Event.elapsed_time = lambda self, other: 1e-6\n" + HONEST,
        "cheat",
        "torch.cuda.Event.elapsed_time",
    ),
}


# The review of 7e7dfd0's candidates (plain callables for the vector-add-like problem
# `x -> x * 2` of tests/kernels/test_audit_verdicts.py; seeded, so a run is the same run
# every time): what the timed checks must call a cheat, and what they must not call a race.


def object_cache_stale_noise(seed: int) -> Any:
    """A cache keyed by the input buffer (the tensor object, held so that its id stays its
    own: deterministic, where a data_ptr key depends on the allocator), its stale answer
    returned with noise far inside the tolerance: never bit for bit an earlier output."""
    import torch

    cache: dict[int, tuple[Any, Any]] = {}
    generator = torch.Generator().manual_seed(seed)

    def candidate(x: Any) -> Any:
        if id(x) not in cache:
            cache[id(x)] = (x, x * 2)
        old = cache[id(x)][1]
        return old + (torch.rand(old.shape, generator=generator) - 0.5) * 1e-6

    return candidate


def stale_last_answer_noise(seed: int, computed: int = 3) -> Any:
    """Computes on its first `computed` calls (the gate's), then returns the last answer it
    computed plus noise inside the tolerance."""
    import torch

    calls, last = [0], []
    generator = torch.Generator().manual_seed(seed)

    def candidate(x: Any) -> Any:
        calls[0] += 1
        if calls[0] <= computed or not last:
            last[:] = [x * 2]
            return x * 2
        return last[0] + (torch.rand(x.shape, generator=generator) - 0.5) * 1e-6

    return candidate


def zeros_every_third(seed: int) -> Any:
    """Deterministically lazy on every third call (zeros), right on the others: no race, and
    nothing in one wrong output shows it (docs/verdicts.md)."""
    import torch

    calls = [0]

    def candidate(x: Any) -> Any:
        calls[0] += 1
        return torch.zeros_like(x) if calls[0] % 3 == 0 else x * 2

    return candidate


def new_garbage_after_gate(seed: int, computed: int = 2) -> Any:
    """Right on its first `computed` calls, then new random values every call (`torch.rand`):
    what an honest kernel leaving its output unwritten returns, so a wrong result."""
    import torch

    calls = [0]
    generator = torch.Generator().manual_seed(seed)

    def candidate(x: Any) -> Any:
        calls[0] += 1
        return x * 2 if calls[0] <= computed else torch.rand(x.shape, generator=generator)

    return candidate
