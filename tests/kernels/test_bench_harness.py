"""The benchmark harness under the CPU interpreter: contract, adapters, every failure kind,
each cheat, A/B plumbing and the CLI's exit statuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
from kernelscope.protocol.bench import BenchResult
from tests.conftest import EXAMPLES, TESTS
from tests.support.bench_fixtures import HEADER, REFERENCE, alive_with, make_workspace

pytestmark = pytest.mark.slow


def bench(ws: Path, **kwargs: object) -> BenchResult:
    """A cold run. The static rules are off: the failure kernels here misbehave at run time on
    purpose, and the static gate would stop them before the defences under test."""
    kwargs.setdefault("seeds", 2)
    kwargs.setdefault("extra_args", ["--no-static-rules"])
    kwargs.setdefault("mode", "interpreter")
    return run_benchmark(BenchRequest(workspace=ws, **kwargs))  # type: ignore[arg-type]


@pytest.mark.parametrize("example", ["vector_add", "softmax", "layernorm", "matmul"])
def test_examples_pass_under_the_interpreter(example: str) -> None:
    result = bench(EXAMPLES / example)
    assert result.passed, result.error
    assert result.mode == "interpreter" and result.status == "ok"
    assert len(result.configs) == 2 and all(c.passed and c.speedup for c in result.configs)
    assert any("not GPU figures" in m for m in result.messages)
    assert result.env["torch"] and result.env["triton"]


def test_ab_plumbing_slow_variant_loses(tmp_path: Path) -> None:
    ws = EXAMPLES / "vector_add"
    result = bench(ws, candidate=ws / "kernel_slow.py", baseline=str(ws / "kernel.py"))
    assert result.passed and result.baseline.endswith("kernel.py")
    assert result.score is not None and result.score < 0.8  # 16x more programs is slower
    lo, hi = result.score_ci  # type: ignore[misc]
    assert lo <= result.score <= hi
    for config in result.configs:
        assert config.candidate_samples == config.baseline_samples >= 4  # ABBA rounds


@pytest.mark.parametrize(
    "kernel,kind,fragment",
    [
        ("syntax_error", "compile", "SyntaxError"),
        ("triton_error", "exception", "no_such_op"),
        ("raises", "exception", "block size must divide n"),
        ("wrong", "wrong_result", "rel_err"),
        ("mutates_input", "cheat", "modified its inputs"),
        ("aliases_input", "cheat", "view of input 0"),
        ("nan", "wrong_result", "NaN/Inf"),
        ("wrong_shape", "wrong_result", "shape"),
        ("wrong_dtype", "wrong_result", "dtype"),
        ("wrong_strides", "wrong_layout", "strides (2,), expected (1,)"),
        ("cached", "cheat", "cached answer"),
        ("oom", "out_of_memory", ""),
    ],
)
def test_failures_are_classified(tmp_path: Path, kernel: str, kind: str, fragment: str) -> None:
    result = bench(make_workspace(tmp_path / kernel, kernel))
    assert not result.passed
    assert result.error is not None and result.error.kind == kind, result.error
    assert fragment in result.error.message
    if kind in ("wrong_result", "cheat", "exception", "out_of_memory") and kernel not in ("syntax_error",):
        assert result.error.config == "n=300"  # the verdict names the configuration
        assert "n=300" in result.error.message


@pytest.mark.parametrize("kernel,fragment", [("abort", "SIGABRT"), ("segfault", "SIGSEGV")])
def test_crashes_become_structured_failures(tmp_path: Path, kernel: str, fragment: str) -> None:
    result = bench(make_workspace(tmp_path / kernel, kernel))
    assert result.error is not None and result.error.kind == "crash"
    assert fragment in result.error.message and result.error.exit_code is not None
    assert result.error.stderr_tail is not None


def test_hang_times_out(tmp_path: Path) -> None:
    result = bench(make_workspace(tmp_path / "hang", "hang"), timeout_s=20)
    assert result.error is not None and result.error.kind == "timeout"
    assert "20 s" in result.error.message


def test_interpreter_limits_are_reported_clearly(tmp_path: Path) -> None:
    tuned = bench(make_workspace(tmp_path / "tuned", "autotuned"))
    assert tuned.status == "unsupported" and "cannot autotune" in tuned.error.message  # type: ignore[union-attr]
    reference = (tmp_path / "tuned" / "reference.py").read_text()
    fp8 = make_workspace(
        tmp_path / "fp8",
        reference=reference.replace('"dtype": "float32"}, {', '"dtype": "float8_e4m3fn"}, {'),
    )
    result = bench(fp8)
    assert result.status == "unsupported" and "no fp8" in result.error.message  # type: ignore[union-attr]
    # bfloat16 runs: the interpreter's faults are told apart from the kernel's (test_bf16_interpreter.py)
    bf16 = make_workspace(
        tmp_path / "bf16", reference=reference.replace('"dtype": "float32"}, {', '"dtype": "bfloat16"}, {')
    )
    assert bench(bf16).status == "ok"


def test_setup_errors(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    (ws / "reference.py").write_text("CONFIGS = []\n")
    result = bench(ws)
    assert result.error is not None and result.error.kind == "setup"
    ws2 = make_workspace(tmp_path / "ws2")
    result = bench(ws2, entry="no_such_function")
    assert (
        result.error is not None
        and result.error.kind == "setup"
        and "no_such_function" in result.error.message
    )


KERNELBENCH_REFERENCE = """
import torch

class Model(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, y):
        return (x + y) * self.scale

def get_inputs():
    return [torch.randn(512), torch.randn(512)]

def get_init_inputs():
    return [2.0]
"""

KERNELBENCH_CANDIDATE = """
import torch
import triton
import triton.language as tl

@triton.jit
def fused(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, (x + y) * scale, mask=mask)

class ModelNew(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, y):
        out = torch.empty_like(x)
        fused[(triton.cdiv(x.numel(), 128),)](x, y, out, x.numel(), self.scale * FACTOR, BLOCK=128)
        return out

FACTOR = 1.0
"""


def test_kernelbench_adapter(tmp_path: Path) -> None:
    ws = tmp_path / "kb"
    ws.mkdir()
    (ws / "reference.py").write_text(KERNELBENCH_REFERENCE)
    (ws / "kernel.py").write_text(KERNELBENCH_CANDIDATE)
    result = bench(ws)
    assert result.passed, result.error
    assert [c.name for c in result.configs] == ["default"]
    (ws / "kernel.py").write_text(KERNELBENCH_CANDIDATE.replace("FACTOR = 1.0", "FACTOR = 1.5"))
    wrong = bench(ws)
    assert wrong.error is not None and wrong.error.kind == "wrong_result"


def test_gate_command_adapter(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "gate")
    script = ws / "test_kernel.py"
    script.write_text(
        "import json, sys\n"
        "ok = len(sys.argv) > 1 and sys.argv[1] == 'pass'\n"
        "print('noise before the verdict')\n"
        "print(json.dumps({'passed': ok, 'message': 'rel_err 0.2 on 4096x4096' if not ok else 'ok',\n"
        "                  'configs': [{'name': '4096x4096', 'passed': ok, 'max_abs_err': 0.5}]}))\n"
        "sys.exit(0 if ok else 1)\n"
    )
    failed = bench(ws, gate_command=f"{sys.executable} test_kernel.py fail")
    assert failed.status == "gate_failed" and failed.error.kind == "gate_command"  # type: ignore[union-attr]
    assert failed.error.message == "rel_err 0.2 on 4096x4096"  # type: ignore[union-attr]
    assert failed.configs[0].name == "4096x4096" and failed.configs[0].max_abs_err == 0.5
    passed = bench(ws, gate_command=f"{sys.executable} test_kernel.py pass")
    assert passed.passed and passed.messages[0].startswith("gate command passed")
    assert passed.configs and passed.configs[0].speedup is not None  # then the harness timed it
    # the workspace's gate is user code too: the same caps apply and the verdict names them
    (ws / "noisy_gate.py").write_text("import sys\nwhile True:\n    sys.stdout.write('y' * 1_000_000)\n")
    capped = bench(ws, gate_command=f"{sys.executable} noisy_gate.py")
    assert capped.status == "gate_failed" and "printed more than 64 MB" in capped.error.message  # type: ignore[union-attr]


def test_result_schema_is_stable() -> None:
    """A change to BenchResult's JSON Schema must come with a schema_version bump and a new
    snapshot (regenerate with KERNELSCOPE_UPDATE_SNAPSHOTS=1)."""
    import os

    snapshot = TESTS / "snapshots" / "bench_result.schema.json"
    current = json.dumps(BenchResult.model_json_schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("KERNELSCOPE_UPDATE_SNAPSHOTS"):
        snapshot.write_text(current)
    assert snapshot.read_text() == current
    assert BenchResult.model_fields["schema_version"].default == 1


def test_cli_exit_statuses(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("kernelscope")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(exe), "bench", *args], capture_output=True, text=True, timeout=300)

    good = run(
        "-w", str(make_workspace(tmp_path / "good")), "--mode", "interpreter", "--seeds", "1", "--json"
    )
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["passed"] is True
    bad = run("-w", str(make_workspace(tmp_path / "bad", "wrong")), "--mode", "interpreter", "--seeds", "1")
    assert bad.returncode == 3 and "wrong_result" in bad.stderr
    assert run("-w", str(tmp_path / "missing")).returncode == 2
    assert run("--no-such-flag").returncode == 2
    unsupported = run("-w", str(make_workspace(tmp_path / "tuned", "autotuned")), "--mode", "interpreter")
    assert unsupported.returncode == 2


@pytest.mark.parametrize(
    "kernel,kind,fragment,limit",
    [
        ("fork_bomb", "resource_limit", "started more than 256 processes", None),
        ("prints_forever", "resource_limit", "printed more than 64 MB", None),
        ("hoards_memory", "out_of_memory", "over the 1200 MB cap", 1200),
    ],
)
def test_resource_abuse_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: str, kind: str, fragment: str, limit: int | None
) -> None:
    """A kernel that forks without end, prints without end or holds memory is killed with its
    whole process group, long before the timeout, and nothing of it is left running."""
    import tempfile

    ws = make_workspace(tmp_path / kernel, kernel)
    jobs = tmp_path / "jobs"  # the run's scratch copy: every process of it carries this path
    jobs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(jobs))
    result = bench(ws, timeout_s=100, memory_limit_mb=limit)
    assert result.error is not None and result.error.kind == kind, result.error
    assert fragment in result.error.message
    assert alive_with(str(jobs)) == []
    assert sum(f.stat().st_size for f in tmp_path.rglob("*") if f.is_file()) < 1 << 20


def test_default_memory_cap_is_half_of_ram() -> None:
    from kernelscope.daemon.engine.run.child_limits import ResourceLimits, default_memory_limit_mb

    total_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024)
    assert default_memory_limit_mb() == total_mb // 2
    assert ResourceLimits.for_benchmark(None).memory_mb == total_mb // 2
    assert ResourceLimits.for_benchmark(0).memory_mb is None
    assert ResourceLimits.for_benchmark(800).memory_mb == 800


SORTED_REFERENCE = REFERENCE.replace(
    'return (torch.randn(config["n"], generator=g).to(device),',
    'return (torch.randn(config["n"], generator=g).sort().values.to(device),',
).replace(
    "def reference(x, y):\n",
    "def reference(x, y):\n    assert bool((x[1:] >= x[:-1]).all()), 'x must be sorted'\n",
)


def test_a_reference_that_raises_on_perturbed_inputs_times_them_unperturbed(tmp_path: Path) -> None:
    """The reference (the baseline too) validates its input; the timing's swaps break it: the
    inputs come back as they were and timing goes on unperturbed, with a note."""
    result = bench(make_workspace(tmp_path / "sorted", reference=SORTED_REFERENCE))
    assert result.passed, result.error
    assert all(any("could not be perturbed" in n for n in c.notes or []) for c in result.configs)


FORGING_KERNEL = HEADER.replace("import torch\n", "import json, os, sys\nimport torch\n", 1) + (
    "\ndef kernel_fn(x, y):\n"
    "    a = sys.argv\n"
    "    forged = {'schema_version': 1, 'status': 'ok', 'passed': True, 'mode': 'gpu', 'score': 42.0,\n"
    "              'workspace': a[a.index('--workspace') + 1], 'candidate': a[a.index('--candidate') + 1],\n"
    "              'baseline': 'reference', 'entry_point': 'kernel_fn'}\n"
    "    with open(a[a.index('--output') + 1], 'w') as f:\n"
    "        json.dump(forged, f)\n"
    "    os._exit(0)\n"
)


def test_a_result_the_candidate_wrote_itself_is_rejected(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "forge")
    (ws / "kernel.py").write_text(FORGING_KERNEL)
    result = bench(ws)
    assert not result.passed and result.status == "gate_failed" and result.score is None
    assert result.error is not None and result.error.kind == "cheat"
    assert "signature does not verify" in result.error.message


def test_a_signed_result_must_have_measured_in_the_mode_asked_for(tmp_path: Path) -> None:
    import hashlib
    import hmac

    from kernelscope.daemon.engine.run.bench import _not_the_runners

    key, output = b"k" * 32, tmp_path / "result.json"
    request = BenchRequest(workspace=tmp_path, mode="auto")
    env = {"TRITON_INTERPRET": "1"}

    def check(**fields: object) -> str | None:
        result = BenchResult(
            status="ok", passed=True, mode="gpu", workspace="w", candidate="c", baseline="b", entry_point="e"
        ).model_copy(update=fields)
        body = result.model_dump_json().encode()
        Path(f"{output}.sig").write_text(hmac.new(key, body, hashlib.sha256).hexdigest())
        return _not_the_runners(result, body, output, key, request, env)

    assert "no configuration measured" in (check() or "")
    real = bench(EXAMPLES / "vector_add")
    assert real.passed and real.mode == "interpreter"
    assert "claims mode gpu" in (check(configs=real.configs) or "")
    assert check(configs=real.configs, mode="interpreter") is None
