"""GPU check of the benchmark harness: run it whenever an NVIDIA GPU is available.

    .venv/bin/python benchmarks/gpu_check.py [--out gpu_check_report.json]

1. Every example workspace through the GPU path (`kernelscope bench`'s engine): gate and
   A/B timing of kernel.py against the reference, and of kernel_slow.py against kernel.py.
2. An A/A test per example: kernel.py as both baseline and candidate; every per-config
   ratio must be 1.00 +/- 0.02.
3. The harness's kernel-only median (CUDA events around each Triton launch, L2 flushed before
   every call) against a direct `triton.testing.do_bench(..., return_mode="median")` call on
   the same kernel and inputs, in this process: within 10%; and kernel-only <= the
   launch-inclusive median.
4. L2 is flushed before every timed call: on an L2-resident vector add the harness's
   kernel-only time is not below the hot-cache time of `do_bench_cudagraph` (which does not
   flush); `--cuda-graph` runs pass with a flush too.
5. Every reward hack of tests/support/cheat_kernels.py (and the GPU-only ones: a side stream, a
   patched `Event.elapsed_time`) fails with its kind on the GPU; the honest kernel passes;
   and again through the daemon's warm worker (forked jobs, kernels/worker.py).
6. The warm worker on the GPU: it starts without creating a CUDA context (NVML-based
   checks), a vector-add probe through it passes in gpu mode, and every probe after the first
   completes in under one second (one configuration, short timing windows: the fixed costs a
   probe pays, which the worker exists to cut; the cold path's time beside it).

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
DIRECT_TOLERANCE = 0.10


def _against_kernel(ws: Path, candidate: Path) -> Any:
    """`candidate` timed against the workspace's own kernel.py on the GPU."""
    from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark

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


def flush_check(check: Any) -> None:
    """A vector add small enough to stay in L2: timed hot (do_bench_cudagraph does not flush)
    it is faster than the harness's kernel-only time, which flushes before every call."""
    import torch
    import triton.testing

    from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark

    ws = ROOT / "examples" / "vector_add"
    kernel = _load(ws / "kernel.py", "flush_kernel")
    x = torch.rand(98304, device="cuda")
    y = torch.rand(98304, device="cuda")
    hot = float(triton.testing.do_bench_cudagraph(lambda: kernel.kernel_fn(x, y), rep=50))
    run = run_benchmark(BenchRequest(workspace=ws, mode="gpu", seeds=1, timeout_s=300))
    first = run.configs[0] if run.configs else None
    check(
        "vector_add: L2 flushed before every timed call (not faster than a hot-cache graph replay)",
        first is not None
        and first.candidate_kernel_ms is not None
        and first.candidate_kernel_ms >= 0.9 * hot,
        kernel_ms=first and first.candidate_kernel_ms,
        hot_graph_ms=hot,
    )


def cheats_check(check: Any, warm: bool = False) -> None:
    """The reward hacks of tests/support/cheat_kernels.py on the GPU: each fails with its kind (with
    `warm`, each one a job forked by one warm worker, the honest kernel last)."""
    import shutil
    import tempfile

    sys.path.insert(0, str(ROOT))
    from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
    from kernelscope.daemon.engine.run.warm_worker import WarmWorkers
    from tests.support.cheat_kernels import GPU_ONLY_CHEATS, HONEST, VECTOR_ADD_CHEATS

    workers = WarmWorkers() if warm else None
    label = " (warm worker)" if warm else ""

    with tempfile.TemporaryDirectory() as tmp:
        cases = {"honest": (HONEST, None, ""), **VECTOR_ADD_CHEATS, **GPU_ONLY_CHEATS}
        if warm:  # every cheat first: the honest job last shows nothing of them survived
            cases = {**{k: v for k, v in cases.items() if k != "honest"}, "honest": cases["honest"]}
        for name, (source, kind, fragment) in cases.items():
            ws = Path(tmp) / name
            shutil.copytree(ROOT / "examples" / "vector_add", ws)
            (ws / "kernel.py").write_text(source)
            result = run_benchmark(
                BenchRequest(workspace=ws, mode="gpu", seeds=2, timeout_s=300), workers=workers
            )
            kinds = (kind,) if isinstance(kind, str) else kind
            got = result.error.kind if result.error else None
            ok = result.passed if kind is None else (not result.passed and got in kinds)
            if warm and kind is None:
                ok = ok and "warm_worker" in result.env
            check(
                f"cheat {name}{label}: {'passes' if kind is None else 'fails as ' + '/'.join(kinds)}",
                ok and (kind is None or fragment in (result.error.message if result.error else "")),
                got=got,
                message=result.error and result.error.message[:200],
                score=result.score,
                warm_worker=result.env.get("warm_worker"),
            )
    if workers is not None:
        workers.close()


def warm_probe_check(check: Any) -> None:
    """A vector-add probe through the warm worker, as the daemon runs one on save: the worker
    starts without a CUDA context, the probe runs in gpu mode, and every probe after the first
    takes under one second of wall time (cold runs beside it)."""
    import logging

    from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
    from kernelscope.daemon.engine.run.warm_worker import WarmWorkers

    notes: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            notes.append(record.getMessage())

    logging.getLogger("kernelscope.bench").addHandler(Keep())
    logging.getLogger("kernelscope.bench").setLevel(logging.INFO)
    ws = ROOT / "examples" / "vector_add"

    def request() -> BenchRequest:
        return BenchRequest(
            workspace=ws,
            mode="gpu",
            seeds=1,
            timeout_s=300,
            extra_args=["--config", "n=98304", "--warmup-ms", "5", "--rep-ms", "20", "--rounds", "1"],
        )

    workers = WarmWorkers()
    try:
        walls, results = [], []
        for _ in range(5):
            start = time.perf_counter()
            results.append(run_benchmark(request(), workers=workers))
            walls.append(time.perf_counter() - start)
        cold = []
        for _ in range(2):
            start = time.perf_counter()
            run_benchmark(request())
            cold.append(time.perf_counter() - start)
        pids = {(r.env.get("warm_worker") or {}).get("pid") for r in results}
        check(
            "warm worker: GPU vector-add probes pass in gpu mode through one worker",
            all(r.passed and r.mode == "gpu" for r in results) and len(pids) == 1 and None not in pids,
            errors=[r.error and r.error.message[:200] for r in results],
            worker_log=notes[-5:],
        )
        check(
            "warm worker: every probe after the first completes in under 1 s",
            all(r.passed for r in results) and max(walls[1:]) < 1.0,
            warm_s=[round(w, 3) for w in walls],
            cold_s=[round(c, 3) for c in cold],
            runner_s=[r.duration_s for r in results],
        )
    finally:
        workers.close()


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

    from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark

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
            measured = next((c for c in main_run.configs if c.name == config["name"]), None)
            kernel_ms = measured.candidate_kernel_ms if measured else None
            direct = direct_median_ms(ws, config)
            deviation = None if kernel_ms is None else abs(kernel_ms - direct) / direct
            check(
                f"{name} {config['name']}: harness kernel-only median vs direct do_bench median",
                deviation is not None
                and deviation <= DIRECT_TOLERANCE
                and measured is not None
                and kernel_ms <= (measured.candidate_ms or 0.0) * 1.02,
                kernel_ms=kernel_ms,
                launch_inclusive_ms=measured and measured.candidate_ms,
                direct_ms=direct,
                deviation=deviation,
            )
        graph_run = run_benchmark(
            BenchRequest(workspace=ws, mode="gpu", seeds=1, timeout_s=300, extra_args=["--cuda-graph"])
        )
        check(
            f"{name}: --cuda-graph (L2 flushed before every replay) passes",
            graph_run.passed,
            score=graph_run.score,
            error=graph_run.error and graph_run.error.message,
        )

    flush_check(check)
    cheats_check(check)
    cheats_check(check, warm=True)
    warm_probe_check(check)

    report["passed"] = failures == 0
    report["failures"] = failures
    report["duration_s"] = round(time.perf_counter() - started, 1)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{'PASSED' if failures == 0 else f'{failures} FAILED'} in {report['duration_s']} s -> {args.out}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
