"""kernelscope.protocol.static_rules: the editor-time cheat checks, read from source text only.

Each rule has a minimal offending example (the line it must point at carries a `# HIT`
comment) and a near miss that must stay quiet; every honest candidate in the repository
(examples/*/kernel*.py, the Triton `ModelNew`s of test_kernelbench.py and cheat_kernels.py,
the SOL workspace's Triton kernel) has no error finding; upstream KernelBench's own unit
tests (src/kernelbench/unit_tests/test_static_checker.py, commit 423217d) are adapted where
they apply; the cheats of tests/support/cheat_kernels.py that a static check can see are seen.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelscope.protocol.static_rules import RULES, Finding, check_source
from tests.conftest import EXAMPLES
from tests.kernels.test_kernelbench import GELU_KERNEL, GELU_SIGMOID_KERNEL, RELU_KERNEL
from tests.support.cheat_kernels import (
    GELU_FRAMEWORK,
    GELU_HONEST,
    GPU_ONLY_CHEATS,
    HONEST,
    VECTOR_ADD_CHEATS,
)
from tests.support.sol_workspace import make_sol_workspace

HEAD = "import torch\nimport triton\nimport triton.language as tl\n"
JIT = HEAD + textwrap.dedent(
    """
    @triton.jit
    def _k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


    def launch(x):
        out = torch.empty_like(x)
        _k[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
    """
)


def model_new(body: str, base: str = "torch.nn.Module", extra: str = "") -> str:
    """A KernelBench candidate around JIT's kernel: ModelNew with `body` as its forward's."""
    forward = textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8)
    return f"{JIT}{extra}\n\nclass ModelNew({base}):\n    def forward(self, x):\n{forward}\n"


def kernel_fn(body: str, extra: str = "") -> str:
    """A native candidate around JIT's kernel: kernel_fn with `body`."""
    return f"{JIT}{extra}\n\ndef kernel_fn(x):\n{textwrap.indent(src(body).strip(chr(10)), '    ')}\n"


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def decorated(decorator: str, extra: str = "") -> str:
    """kernel_fn (launching JIT's kernel) under `decorator`."""
    return kernel_fn("return launch(x)", extra).replace("def kernel_fn", f"{decorator}\ndef kernel_fn")


def hit_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if "# HIT" in line)


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


# Upstream's own Triton prompt example (src/kernelbench/prompts/model_new_ex_add_triton.py at
# 423217d), comments shortened: KernelBench's canonical honest Triton candidate.
UPSTREAM_TRITON_EXAMPLE = '''import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    block_start = tl.program_id(0) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def triton_add(x: torch.Tensor, y: torch.Tensor):
    """Wraps the Triton kernel call."""
    assert x.is_cuda and y.is_cuda, "Tensors must be on CUDA."
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n_elements = x.numel()
    BLOCK_SIZE = 128
    grid = lambda meta: ((n_elements + meta["BLOCK_SIZE"] - 1) // meta["BLOCK_SIZE"],)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
    return out


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a, b):
        # Instead of "return a + b", call our Triton-based addition
        return triton_add(a, b)
'''

# Upstream's adversarial unit_tests/test_kernels/non_default_stream_kernel.py, the CUDA source
# shortened: a CUDA C++ extension where kernelscope wants Triton.
UPSTREAM_LOAD_INLINE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

matmul_cuda_source = r"""
torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) { /* cuBLAS on a side stream */ }
"""
matmul_module = load_inline(name="fast_matmul", cpp_sources="...", cuda_sources=matmul_cuda_source,
                            functions=["matmul_cuda"], verbose=False)

class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.matmul = matmul_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.matmul.matmul_cuda(A, B)
'''


# -- honest candidates: no error ----------------------------------------------------------------


def honest_candidates() -> list[tuple[str, str, str]]:
    out = [
        (str(p.relative_to(EXAMPLES)), p.read_text(), "native") for p in sorted(EXAMPLES.glob("*/kernel*.py"))
    ]
    out += [
        ("cheat_kernels.HONEST", HONEST, "native"),
        ("cheat_kernels.GELU_HONEST", GELU_HONEST, "kernelbench"),
    ]
    out += [("test_kernelbench.GELU_KERNEL", GELU_KERNEL, "kernelbench")]
    out += [("test_kernelbench.GELU_SIGMOID_KERNEL", GELU_SIGMOID_KERNEL, "kernelbench")]
    out += [("test_kernelbench.RELU_KERNEL", RELU_KERNEL, "kernelbench")]
    out += [("upstream model_new_ex_add_triton.py", UPSTREAM_TRITON_EXAMPLE, "kernelbench")]
    return out


@pytest.mark.parametrize("kind_given", [True, False], ids=["kind", "no-kind"])
@pytest.mark.parametrize(
    ("name", "text", "kind"), honest_candidates(), ids=[c[0] for c in honest_candidates()]
)
def test_honest_candidates_have_no_errors(name: str, text: str, kind: str, kind_given: bool) -> None:
    findings = check_source(text, kind=kind if kind_given else None)
    assert errors(findings) == [], findings
    assert [f for f in findings if f.rule.startswith("torch-")] == [], findings


def test_examples_are_all_checked() -> None:
    names = {n for n, _, _ in honest_candidates()}
    assert {f"{e}/kernel.py" for e in ("vector_add", "softmax", "layernorm", "matmul")} <= names


def test_sol_workspace_triton_kernel_has_no_findings(tmp_path: Path) -> None:
    ws = make_sol_workspace(tmp_path / "sol", "triton")
    assert check_source((ws / "kernel.py").read_text(), kind="sol-execbench") == []


def test_sol_v0_baseline_is_quiet_only_when_marked(tmp_path: Path) -> None:
    """sol_seed's V0 is PyTorch on purpose: unmarked, it has no Triton kernel (an error) and runs
    torch in the timed path; the framework-baseline line turns both off, as the runner does."""
    text = (make_sol_workspace(tmp_path / "v0", "v0") / "kernel.py").read_text()
    rules = {f.rule for f in check_source(text, kind="sol-execbench")}
    assert {"triton-impl", "torch-op-in-timed-path"} <= rules
    marked = "# kernelscope: framework-baseline\n" + text
    assert check_source(marked, kind="sol-execbench") == []


def test_framework_baseline_marker_silences_torch_rules_only() -> None:
    text = GELU_FRAMEWORK.replace(
        "\nimport torch\n", "\n  #  kernelscope:framework-baseline (V0)\nimport torch\n"
    )
    assert check_source(GELU_FRAMEWORK, kind="kernelbench")[0].rule == "torch-computation-ops"
    assert check_source(text, kind="kernelbench") == []
    cheat = text + "\nimport time\ntime.perf_counter = lambda: 0.0\n"
    assert [f.rule for f in check_source(cheat)] == ["timing-event-patch"]
    not_a_marker = GELU_FRAMEWORK + "\nx = 1  # kernelscope: framework-baseline\n"
    assert check_source(not_a_marker, kind="kernelbench") != []


# -- each rule: an offending example (`# HIT` marks its line) -----------------------------------

ALIASED_F = "\nimport torch.nn.functional as F\n"
INIT = "class ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
OFFENDING: list[tuple[str, str, str | None]] = [
    # (rule, source, kind)
    ("torch-fallback-in-except", model_new("""
        try:
            return launch(x)
        except Exception:
            return torch.nn.functional.gelu(x)  # HIT
    """), "kernelbench"),
    ("torch-fallback-in-except", model_new("""
        try:
            return launch(x)
        except RuntimeError:
            return self._slow(x)  # HIT
    """, extra=ALIASED_F) + "\n    def _slow(self, x):\n        return F.gelu(x)\n", None),
    ("torch-fallback-in-except", model_new("""
        try:
            out = launch(x)
        finally:
            out = super().forward(x)  # HIT
        return out
    """, base="Model"), None),
    ("torch-fallback-in-except", kernel_fn("""
        try:
            return launch(x)
        except:  # noqa: E722
            return x.softmax(-1)  # HIT
    """), "native"),
    ("inheritance-bypass", JIT + src("""
        class ModelNew(Model):
            def forward(self, x):  # HIT
                pass
    """), None),
    ("inheritance-bypass", JIT + src("""
        class ModelNew(Model):  # HIT
            def __init__(self):
                super().__init__()
    """), None),
    ("inheritance-bypass", JIT + src("""
        class ModelNew(Model):
            def forward(self, x):  # HIT
                "Doc."
                return super().forward(x)
    """), None),
    ("inheritance-bypass", f"{JIT}\nfrom problem import Model as ModelNew  # HIT\n", "kernelbench"),
    ("inheritance-bypass", JIT + src("""
        class Model(torch.nn.Module):
            pass

        ModelNew = Model  # HIT
    """), None),
    ("timing-event-patch", f"{HEAD}time_hack = 1\ntorch.cuda.synchronize = lambda: None  # HIT\n", None),
    ("timing-event-patch", f"{HEAD}import time\nsetattr(time, 'perf_counter', lambda: 0.0)  # HIT\n", None),
    ("timing-event-patch", f"{HEAD}from torch.cuda import Event\nEvent.record = print  # HIT\n", None),
    ("timing-event-patch", f"{HEAD}from unittest import mock\nmock.patch('time.monotonic').start()  # HIT\n",
     None),
    ("thread-injection", f"{HEAD}from concurrent.futures import ThreadPoolExecutor  # HIT\n", None),
    ("thread-injection", kernel_fn("return pool.submit(launch, x)", "pool = multiprocessing.Pool()  # HIT\n"),
     None),
    ("thread-injection", f"{HEAD}import asyncio  # HIT\n", None),
    ("lazy-eval", f"{HEAD}from torch import Tensor\n\nclass Fake(Tensor):  # HIT\n    pass\n", None),
    ("lazy-eval", kernel_fn("return launch(x).as_subclass(Lazy)  # HIT"), None),
    ("lazy-eval", HEAD + src("""
        class Lazy:
            def __torch_function__(self, *a):
                return torch.Tensor.__new__(Lazy)  # HIT
    """), None),
    ("triton-impl", f"{HEAD}\ndef kernel_fn(x):  # HIT\n    return x.clone()\n", "native"),
    ("triton-impl", src("""
        import torch
        import triton

        @triton.jit
        def _noop(x_ptr):
            pass

        class ModelNew(torch.nn.Module):  # HIT
            def forward(self, x):
                _noop[(1,)](x)
                return x
    """), "kernelbench"),
    ("stream-injection", kernel_fn("""
        s = torch.cuda.Stream()  # HIT
        with torch.cuda.stream(s):
            return launch(x)
    """), None),
    ("stream-injection", kernel_fn("""
        out = launch(x)
        torch.cuda.current_stream().wait_stream(side)  # HIT
        return out
    """), None),
    ("pytorch-wrap", model_new("return self.fc(x)").replace(
        INIT[:33], INIT + "        self.fc = nn.Linear(4, 4)  # HIT\n"), "kernelbench"),
    ("torch-computation-ops", model_new("return torch.matmul(launch(x), x)  # HIT"), "kernelbench"),
    ("torch-computation-ops", model_new("return F.silu(launch(x))  # HIT", extra=ALIASED_F), "kernelbench"),
    ("torch-computation-ops", kernel_fn("return helper(x)", extra=src("""
        from torch import matmul

        def helper(x):
            return matmul(x, x)  # HIT
    """)), "native"),
    ("torch-op-in-timed-path", kernel_fn("return torch.add(launch(x), 1)  # HIT"), "native"),
    ("torch-op-in-timed-path", kernel_fn("y = launch(x)\nreturn y / y.sum()  # HIT"), "native"),
    ("torch-op-in-timed-path", f"{JIT}\n\ndef run(x, out):\n    out[:] = torch.rsqrt(launch(x))  # HIT\n",
     "sol-execbench"),
    ("reference-call", f"{JIT}from reference import reference as kernel_fn  # HIT\n", "native"),
    ("reference-call", kernel_fn("return ref.reference(x)  # HIT", "import reference as ref\n"), "native"),
    ("reference-call", f"{JIT}import reference\nkernel_fn = reference.reference  # HIT\n", "native"),
    ("reference-call", JIT + src("""
        class Model(torch.nn.Module):
            def forward(self, x):
                return x * 2

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return Model()(x)  # HIT
    """), "kernelbench"),
    ("reference-call", model_new("return self.ref(x)").replace(
        INIT[:33], INIT + "        self.ref = Model()  # HIT\n"), "kernelbench"),
    ("torch-compile", decorated("@torch.compile  # HIT"), None),
    ("torch-compile", f"{HEAD}import torch._dynamo\ntorch._dynamo.config.suppress_errors = True  # HIT\n",
     None),
    ("monkey-patch", f"{HEAD}torch.add = lambda a, b: a  # HIT\n", None),
    ("monkey-patch", f"{HEAD}from triton.runtime.jit import JITFunction\nJITFunction.run = print  # HIT\n",
     None),
    ("monkey-patch", f"{HEAD}setattr(triton, 'cdiv', max)  # HIT\n", None),
    ("harness-tampering", f"{HEAD}from kernelscope.kernels import gate  # HIT\n", None),
    ("harness-tampering", f"{HEAD}import sys\nsys.modules['triton'] = None  # HIT\n", None),
    ("harness-tampering", f"{HEAD}import gc\nobjs = gc.get_objects()  # HIT\n", None),
    ("harness-tampering", f"{HEAD}import builtins\nbuiltins.print = len  # HIT\n", None),
    ("harness-tampering", f"{HEAD}gate = __import__('kernelscope.kernels.gate')  # HIT\n", None),
    ("harness-tampering", f"{HEAD}import inspect\ncaller = inspect.currentframe().f_back  # HIT\n", None),
    ("timing-reference", kernel_fn("t0 = time.perf_counter()  # HIT\nreturn launch(x)", "import time\n"),
     None),
    ("timing-reference", kernel_fn("e = torch.cuda.Event(enable_timing=True)  # HIT\nreturn launch(x)"),
     None),
    ("timing-reference", f"{HEAD}from triton.testing import do_bench\nms = do_bench(print)  # HIT\n", None),
    ("state-across-calls", kernel_fn("""
        key = x.data_ptr()
        if key not in _cache:
            _cache[key] = launch(x)  # HIT
        return _cache[key]
    """, extra="_cache = {}\n"), "native"),
    ("state-across-calls", model_new("self.calls += 1  # HIT\nreturn launch(x)"), "kernelbench"),
    ("state-across-calls", kernel_fn("_seen.append(x)  # HIT\nreturn launch(x)", "_seen = []\n"), "native"),
    ("state-across-calls", decorated("@functools.lru_cache  # HIT", "import functools\n"), "native"),
    ("global-state-change", f"{HEAD}torch.backends.cuda.matmul.allow_tf32 = True  # HIT\n", None),
    ("global-state-change", f"{HEAD}torch.manual_seed(0)  # HIT\n", None),
    ("global-state-change", f"{HEAD}import os\nos.environ['TRITON_INTERPRET'] = '1'  # HIT\n", None),
    ("foreign-kernel", UPSTREAM_LOAD_INLINE.replace("import load_inline", "import load_inline  # HIT"),
     "kernelbench"),
    ("foreign-kernel", f"{HEAD}import cupy as cp  # HIT\n", None),
    ("dynamic-code", f"{HEAD}exec(open('other.py').read())  # HIT\n", None),
    ("dynamic-code", f"{HEAD}import importlib\nmod = importlib.import_module(name)  # HIT\n", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "text", "kind"), OFFENDING, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(OFFENDING)]
)
def test_rule_fires_on_its_line(rule: str, text: str, kind: str | None) -> None:
    findings = check_source(text, kind=kind)
    hits = [f for f in findings if f.rule == rule]
    assert hits, findings
    assert hit_line(text) in {f.line for f in hits}, (hit_line(text), hits)
    for f in hits:
        assert f.end_line >= f.line and (f.end_line > f.line or f.end_column > f.column)
        assert ": " in f.message and "\n" not in f.message and not f.message.endswith(".")  # one sentence


def test_every_rule_has_an_offending_example() -> None:
    assert {rule for rule, _, _ in OFFENDING} == set(RULES)


def test_rules_table() -> None:
    for rule, description in RULES.items():
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", rule) and description.endswith(".")
    for _, text, kind in OFFENDING:
        for f in check_source(text, kind=kind):
            assert f.severity in ("error", "warning") and f.source in ("kernelbench", "kernelscope")
            assert f.rule in RULES


SEVERITY = {
    # upstream's STRICT_CHECKS (+ the Triton backend check) are errors, its WARNING_CHECKS warnings
    "torch-fallback-in-except": ("error", "kernelbench"),
    "inheritance-bypass": ("error", "kernelbench"),
    "timing-event-patch": ("error", "kernelbench"),
    "thread-injection": ("error", "kernelbench"),
    "lazy-eval": ("error", "kernelbench"),
    "triton-impl": ("error", "kernelbench"),
    "stream-injection": ("warning", "kernelbench"),
    "pytorch-wrap": ("warning", "kernelbench"),
    "torch-computation-ops": ("warning", "kernelbench"),
}


@pytest.mark.parametrize(("rule", "expected"), sorted(SEVERITY.items()))
def test_kernelbench_rules_keep_upstream_severity(rule: str, expected: tuple[str, str]) -> None:
    text = next(t for r, t, k in OFFENDING if r == rule)
    kind = next(k for r, t, k in OFFENDING if r == rule)
    assert {(f.severity, f.source) for f in check_source(text, kind=kind) if f.rule == rule} == {expected}


# -- near misses: patterns upstream's regexes (or a careless AST rule) would flag --------------

NEAR_MISSES: list[tuple[str, str, str | None]] = [
    # (rule that must stay quiet, source, kind)
    ("torch-fallback-in-except", f"{HEAD}try:\n    import triton.testing\nexcept ImportError:\n    pass\n",
     None),
    ("torch-fallback-in-except", kernel_fn("""
        try:
            return launch(x)
        except Exception as exc:
            raise RuntimeError(f"launch failed for shape {x.shape}") from exc
    """), "native"),
    ("torch-fallback-in-except", kernel_fn("""
        try:
            out = launch(x)
        except ValueError:
            out = torch.empty_like(x)
            launch(out)
        return out
    """), "native"),
    ("inheritance-bypass", model_new("return launch(x)"), "kernelbench"),
    ("inheritance-bypass", model_new("return launch(x)", base="Model"), "kernelbench"),
    ("inheritance-bypass", JIT + src("""
        class _Base(torch.nn.Module):
            def forward(self, x):
                return launch(x)

        class ModelNew(_Base):
            pass
    """), "kernelbench"),
    ("torch-computation-ops", model_new("return launch(x.contiguous().view(-1)).reshape(x.shape)").replace(
        INIT[:33], INIT + "        self.w = nn.Parameter(torch.randn(4))\n"
        "        nn.init.kaiming_uniform_(self.w)\n        self.b = torch.relu(torch.zeros(4))\n"),
     "kernelbench"),
    ("torch-computation-ops", JIT + src("""
        def reference_check(x):
            return torch.matmul(x, x)

        def kernel_fn(x):
            return launch(x)
    """), "native"),
    ("torch-op-in-timed-path", kernel_fn("""
        n = x.numel()
        out = torch.empty((n,), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(n, 1024), max(1, x.stride(0)), math.exp(0))
        return launch(x.flatten()).view(x.shape)
    """, extra="import math\n"), "native"),
    ("timing-event-patch", HEAD + src("""
        "Never write torch.cuda.Event.elapsed_time = ... or time.time = 0."
        # time.perf_counter = lambda: 0
        elapsed_time = 3
    """), None),
    ("thread-injection", f"{HEAD}# import threading\nTHREADS = 'threading.Thread(target=f)'\nn_threads = 4\n",
     None),
    ("stream-injection", kernel_fn("""
        torch.cuda.synchronize()
        stream = torch.cuda.current_stream()
        return launch(x)
    """), None),
    ("lazy-eval", kernel_fn("assert isinstance(x, torch.Tensor)\nreturn launch(x)"), None),
    ("triton-impl", f"{HEAD}from .kernels import add\n\n\ndef kernel_fn(x):\n    return add(x)\n", "native"),
    ("triton-impl", f"{HEAD}\ndef helper(x):\n    return x\n", "native"),
    ("pytorch-wrap", model_new("return launch(x)").replace("torch.nn.Module", "nn.Module").replace(
        "import torch\n", "import torch\nfrom torch import nn\n"), "kernelbench"),
    ("reference-call", f"{JIT}from reference import CONFIGS, make_inputs\n\ndef kernel_fn(x):\n    pass\n",
     "native"),
    ("reference-call", f"{JIT}\nclass Model:\n    pass\n\nm = Model()\n", None),
    ("torch-compile", decorated("@torch.no_grad()"), None),
    ("monkey-patch", kernel_fn("return launch(x)", "class Cfg:\n    pass\n\ncfg = Cfg()\ncfg.block = 64\n"),
     None),
    ("monkey-patch", model_new("self.out = launch(x)\nreturn self.out"), "kernelbench"),
    ("harness-tampering", HEAD + src("""
        import gc
        import inspect
        import sys
        gc.collect()
        PY = sys.version_info
        SIG = inspect.signature(print)
    """), None),
    ("timing-reference", kernel_fn("time.sleep(0)\nreturn launch(x)", extra="import time\n"), None),
    ("state-across-calls", kernel_fn("""
        cache = {}
        cache[x.shape] = launch(x)
        parts = []
        parts.append(cache[x.shape])
        return parts[0]
    """), "native"),
    ("state-across-calls", model_new("self.buf = torch.empty_like(x)\nreturn launch(x)"), "kernelbench"),
    ("global-state-change", kernel_fn("""
        g = torch.Generator()
        g.manual_seed(0)
        level = os.environ.get("L")
        return launch(x)
    """, extra="import os\n"), None),
    ("foreign-kernel", f"{JIT}\nSOURCE = 'load_inline(name=...)'  # cpp_extension in a string\n", None),
    ("thread-injection", JIT + src("""
        def kernel_fn(x):
            return launch(x)

        if __name__ == "__main__":
            import threading
            from triton.testing import do_bench
            x = torch.randn(8)
            threading.Thread(target=print).start()
            print(do_bench(lambda: torch.matmul(x, x)))
    """), "native"),
    ("timing-reference", JIT + src("""
        if __name__ == '__main__':
            import time
            t0 = time.perf_counter()
        else:
            pass
    """), None),
    ("dynamic-code", model_new("return launch(x)") + src("""
        m = ModelNew().eval()
        import importlib
        mod = importlib.import_module("math")
    """), None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "text", "kind"), NEAR_MISSES, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(NEAR_MISSES)]
)
def test_near_miss_stays_quiet(rule: str, text: str, kind: str | None) -> None:
    ast.parse(text)  # quiet because the rule holds, not because the example does not parse
    findings = check_source(text, kind=kind)
    assert [f for f in findings if f.rule == rule] == [], findings


# -- upstream's own unit tests (test_static_checker.py at 423217d), adapted ----------------------


def test_upstream_bypass_try_except() -> None:
    code = "\ntry:\n    result = custom_kernel(x)\nexcept:\n"
    code += "    result = torch.matmul(x, w)  # Fallback to torch\n"
    (f,) = check_source(code)
    assert (f.rule, f.line, f.severity) == ("torch-fallback-in-except", 5, "error")
    assert "torch.matmul" in f.message and "runs PyTorch instead" in f.message


def test_upstream_bypass_pass_statement() -> None:
    code = (
        "\nclass ModelNew(Model):\n    def forward(self, x):\n        pass  # Does nothing, inherits parent\n"
    )
    findings = errors(check_source(code))
    assert [f.line for f in findings if f.rule == "inheritance-bypass"] == [3]
    assert {f.rule for f in findings} == {"inheritance-bypass", "triton-impl"}  # and no Triton kernel


def test_upstream_lazy_eval_make_subclass() -> None:
    code = "\nfake_tensor = torch.Tensor._make_subclass(FakeTensor, real_tensor)\n"
    assert [(f.rule, f.line, f.severity) for f in check_source(code)] == [("lazy-eval", 2, "error")]


def test_upstream_timing_monkey_patch() -> None:
    code = "\n# Override timing to fake benchmarks\ntorch.cuda.Event.elapsed_time = lambda self, end: 0.001\n"
    assert [(f.rule, f.line, f.severity) for f in check_source(code)] == [("timing-event-patch", 3, "error")]


def test_upstream_thread_injection() -> None:
    code = "\nimport threading\nt = threading.Thread(target=background_work)\nt.start()\n"
    assert [(f.rule, f.line) for f in errors(check_source(code))] == [
        ("thread-injection", 2),
        ("thread-injection", 3),
    ]


def test_upstream_triton_example_is_clean() -> None:
    assert check_source(UPSTREAM_TRITON_EXAMPLE, kind="kernelbench") == []


def test_upstream_cuda_adversarial_kernel_is_not_triton() -> None:
    """Upstream only documents that its static checker misses the side stream inside the CUDA
    string; for a Triton workspace the file is no Triton kernel at all (an error)."""
    rules = {(f.rule, f.severity) for f in check_source(UPSTREAM_LOAD_INLINE, kind="kernelbench")}
    assert {("triton-impl", "error"), ("foreign-kernel", "warning")} <= rules


# -- the harness's known cheats (tests/support/cheat_kernels.py) -------------------------------

STATIC_CHEATS = {
    "dead_launch": "torch-op-in-timed-path",
    "pointer_cache": "state-across-calls",
    "value_cache": "state-across-calls",
    "lazy_after_warmup": "state-across-calls",
    "patched_clock": "timing-event-patch",
    "patched_do_bench": "timing-event-patch",
    "patched_gate": "harness-tampering",
    "unhooked_launches": "harness-tampering",
    "patched_runner_method": "harness-tampering",
    "background_thread": "thread-injection",
    "tensor_subclass": "lazy-eval",
    "framework_and_clock": "timing-event-patch",
    "side_stream": "stream-injection",
    "patched_elapsed_time": "timing-event-patch",
}
# Seen only at run time: an operator instead of a launch, or a wrong output layout.
RUNTIME_ONLY = {"framework_only", "view_of_input", "strided_output"}


def test_cheat_table_covers_every_cheat() -> None:
    assert set(STATIC_CHEATS) | RUNTIME_ONLY == set(VECTOR_ADD_CHEATS) | set(GPU_ONLY_CHEATS)


@pytest.mark.parametrize(("name", "rule"), sorted(STATIC_CHEATS.items()))
def test_known_cheat_is_seen(name: str, rule: str) -> None:
    source = {**VECTOR_ADD_CHEATS, **GPU_ONLY_CHEATS}[name][0]
    assert rule in {f.rule for f in check_source(source, kind="native")}


# -- robustness ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "def f(:\n",
        "class ModelNew(\n",
        "x = 'unterminated\n",
        "a\0b",
        "",
        "\n\n",
        "(" * 300 + ")" * 300,
        "\ufeff",
    ],
    ids=["syntax", "unclosed", "string", "nul", "empty", "blank", "deep", "bom"],
)
def test_unparsable_or_odd_input_returns_a_list(text: str) -> None:
    findings = check_source(text)
    assert isinstance(findings, list)
    if text.startswith(("def f(:", "class ModelNew(", "x = '")) or "\0" in text:
        assert findings == []


def test_long_file_is_handled() -> None:
    """2000+ lines: many kernels and launchers, one cheat near the end at a known line."""
    blocks, n = [JIT], 200
    for i in range(n):
        blocks.append(
            f"\n\n@triton.jit\ndef k{i}(p, n, B: tl.constexpr):\n    o = tl.arange(0, B)\n"
            f"    tl.store(p + o, tl.load(p + o, mask=o < n) + {i}, mask=o < n)\n\n\n"
            f"def launch{i}(x):\n    k{i}[(1,)](x, x.numel(), B=1024)\n"
            f"    return launch{i + 1}(x) if {i} < {n - 1} else x\n"
        )
    blocks.append("\n\ndef kernel_fn(x):\n    return launch0(x)\n")
    text = "".join(blocks)
    assert len(text.splitlines()) > 2000
    assert check_source(text, kind="native") == []
    cheat = text + f"\n\ndef launch{n - 1}(x):\n    return torch.matmul(x, x)  # HIT\n"
    hits = [f for f in check_source(cheat, kind="native") if f.rule == "torch-computation-ops"]
    assert [f.line for f in hits] == [hit_line(cheat)]


def test_deep_call_chain_does_not_overflow() -> None:
    chain = "".join(f"def f{i}(x):\n    return f{i + 1}(x)\n\n" for i in range(3000))
    text = f"{JIT}\n{chain}def f3000(x):\n    return torch.relu(x)\n\n\n"
    text += kernel_fn("try:\n    return launch(x)\nexcept Exception:\n    return f0(x)").removeprefix(JIT)
    rules = {f.rule for f in check_source(text, kind="native")}
    assert {"torch-fallback-in-except", "torch-computation-ops"} <= rules


def test_kind_picks_the_timed_entry_point() -> None:
    text = f"{JIT}\n\ndef kernel_fn(x):\n    return torch.matmul(x, x)\n\n\n"
    text += "def run(x):\n    return torch.mm(x, x)\n"
    lines = {
        kind: {f.line for f in check_source(text, kind=kind)} for kind in ("native", "sol-execbench", None)
    }
    assert (
        len(lines["native"]) == 1
        and len(lines["sol-execbench"]) == 1
        and lines["native"] != lines["sol-execbench"]
    )
    assert lines[None] == lines["native"] | lines["sol-execbench"]


def test_findings_are_sorted_and_unique() -> None:
    text = VECTOR_ADD_CHEATS["framework_and_clock"][0] + "\nimport threading\ntorch.add = None\n"
    findings = check_source(text)
    keys = [(f.line, f.column, f.rule) for f in findings]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_importable_and_usable_without_torch() -> None:
    """The daemon imports this where torch may be missing: importing torch or triton fails
    in the child, and checking a candidate that imports both must not try to."""
    code = (
        "import sys\nsys.modules['torch'] = None\nsys.modules['triton'] = None\n"
        "from kernelscope.protocol.static_rules import check_source\n"
        f"print(len(check_source({GELU_HONEST!r}, kind='kernelbench')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "0", proc.stderr


def test_a_file_starting_with_a_byte_order_mark_gets_the_same_findings() -> None:
    """A candidate saved with a UTF-8 BOM (Python imports it) is checked, not skipped as a file
    that does not parse, with its findings at the same positions."""
    findings = check_source(GELU_FRAMEWORK, kind="kernelbench")
    assert findings and check_source("\ufeff" + GELU_FRAMEWORK, kind="kernelbench") == findings
