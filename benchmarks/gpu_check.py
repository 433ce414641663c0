"""GPU check of the benchmark harness: run it whenever an NVIDIA GPU is available.

    .venv/bin/python benchmarks/gpu_check.py [--out gpu_check_report.json]

1. Every example workspace through the GPU path (`kernelscope bench`'s engine): gate and
   A/B timing of kernel.py against the reference, and of kernel_slow.py against kernel.py.
2. An A/A test per example: kernel.py as both baseline and candidate; every per-config
   ratio must be 1.00 +/- 0.02.
3. The harness's candidate median against a direct `triton.testing.do_bench(...,
   return_mode="median")` call on the same kernel and inputs, in this process: within 2%.

Writes one JSON report and exits 0 when every check passed, 1 otherwise, 2 without a GPU.
Budget: well under 8 minutes on one GPU (short `rep` windows, the GPU-size CONFIGS).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ["vector_add", "softmax", "layernorm", "matmul"]
AA_TOLERANCE = 0.02
DIRECT_TOLERANCE = 0.02


def _against_kernel(ws: Path, candidate: Path) -> Any:
    """`candidate` timed against the workspace's own kernel.py on the GPU."""
    from kernelscope.daemon.engine.bench import BenchRequest, run_benchmark

    return run_benchmark(
        BenchRequest(
            workspace=ws,
            candidate=candidate,
            baseline=str(ws / "kernel.py"),
            mode="gpu",
            seeds=1,
            timeout_s=300,
        )
    )


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def direct_median_ms(example: Path, config: dict[str, Any]) -> float:
    import triton.testing

    reference = _load(example / "reference.py", f"ref_{example.name}")
    kernel = _load(example / "kernel.py", f"kernel_{example.name}")
    inputs = reference.make_inputs(config, 0, "cuda")
    return float(
        triton.testing.do_bench(lambda: kernel.kernel_fn(*inputs), warmup=25, rep=100, return_mode="median")
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("gpu_check_report.json"))
    parser.add_argument("--examples", nargs="*", default=EXAMPLES)
    args = parser.parse_args()
    started = time.perf_counter()
    report: dict[str, Any] = {"checks": [], "passed": False}

    import torch

    if not torch.cuda.is_available():
        report["error"] = "no CUDA device visible to torch: nothing checked"
        args.out.write_text(json.dumps(report, indent=2))
        print(report["error"], file=sys.stderr)
        return 2

    from kernelscope.daemon.engine.bench import BenchRequest, run_benchmark

    report["gpu"] = torch.cuda.get_device_name()
    failures = 0

    def check(name: str, ok: bool, **details: Any) -> None:
        nonlocal failures
        failures += 0 if ok else 1
        report["checks"].append({"check": name, "ok": ok, **details})
        print(f"{'ok  ' if ok else 'FAIL'} {name} {json.dumps(details)[:300]}", flush=True)

    for name in args.examples:
        ws = ROOT / "examples" / name
        main_run = run_benchmark(BenchRequest(workspace=ws, mode="gpu", seeds=2, timeout_s=300))
        check(
            f"{name}: gate + timing vs reference",
            main_run.passed and main_run.mode == "gpu",
            score=main_run.score,
            noisy=main_run.noisy,
            error=main_run.error and main_run.error.message,
            configs={
                c.name: {"ms": c.candidate_ms, "speedup": c.speedup, "gbps": c.gbps, "tflops": c.tflops}
                for c in main_run.configs
            },
            env=main_run.env,
        )
        slow = _against_kernel(ws, ws / "kernel_slow.py")
        check(
            f"{name}: slow variant loses",
            slow.passed and (slow.score or 9) < 1.0,
            score=slow.score,
            error=slow.error and slow.error.message,
        )
        aa = _against_kernel(ws, ws / "kernel.py")
        ratios = {c.name: c.speedup for c in aa.configs}
        check(
            f"{name}: A/A ratio 1.00 +/- {AA_TOLERANCE}",
            aa.passed and all(r is not None and abs(r - 1.0) <= AA_TOLERANCE for r in ratios.values()),
            ratios=ratios,
            score=aa.score,
            error=aa.error and aa.error.message,
        )
        reference = _load(ws / "reference.py", f"cfg_{name}")
        for config in reference.CONFIGS:
            harness = next((c.candidate_ms for c in main_run.configs if c.name == config["name"]), None)
            direct = direct_median_ms(ws, config)
            deviation = None if harness is None else abs(harness - direct) / direct
            check(
                f"{name} {config['name']}: harness median vs direct do_bench median",
                deviation is not None and deviation <= DIRECT_TOLERANCE,
                harness_ms=harness,
                direct_ms=direct,
                deviation=deviation,
            )

    report["passed"] = failures == 0
    report["failures"] = failures
    report["duration_s"] = round(time.perf_counter() - started, 1)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{'PASSED' if failures == 0 else f'{failures} FAILED'} in {report['duration_s']} s -> {args.out}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
