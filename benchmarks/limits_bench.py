"""Resource caps for benchmark children: how fast each abuse is stopped, and what the watchdog
costs the caller, measured in one run.

    .venv/bin/python benchmarks/limits_bench.py [--seconds 5]

1. Abusive kernels (tests/support/bench_fixtures.py: fork bomb, endless printing, 2 GiB held with a
   1,200 MB cap, a hang with a 10 s timeout) run through the harness under the CPU
   interpreter: the verdict, the wall time until the harness returned, and the processes
   left behind (must be 0).
2. Watchdog overhead: the caller's own CPU time while it supervises a child that sleeps for
   --seconds, with every cap on vs every cap off (the 50 ms wait loop alone), as a ratio, and
   per sample of the child's process group.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kernelscope.daemon.engine.run import child_limits  # noqa: E402
from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark, run_child  # noqa: E402
from kernelscope.daemon.engine.run.child_limits import ResourceLimits  # noqa: E402
from tests.support.bench_fixtures import alive_with, make_workspace  # noqa: E402


def abuse(tmp: Path) -> None:
    print("kernel            verdict          wall s  left  message")
    for kernel, kwargs in (
        ("fork_bomb", {}),
        ("prints_forever", {}),
        ("hoards_memory", {"memory_limit_mb": 1200}),
        ("hang", {"timeout_s": 10}),
    ):
        ws = make_workspace(tmp / kernel, kernel)
        started = time.perf_counter()
        result = run_benchmark(BenchRequest(workspace=ws, mode="interpreter", seeds=1, **kwargs))  # type: ignore[arg-type]
        wall = time.perf_counter() - started
        error = result.error
        print(
            f"{kernel:17s} {error.kind if error else 'passed':16s} {wall:6.1f}  {len(alive_with(str(ws))):4d}  "
            f"{error.message[:70] if error else ''}"
        )


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def overhead(seconds: float) -> None:
    argv = [sys.executable, "-c", f"import time; time.sleep({seconds})"]
    results = {}
    for name, limits in (
        ("caps off", ResourceLimits(memory_mb=None, max_processes=None, max_output_mb=None)),
        ("caps on", ResourceLimits.for_benchmark(None)),
    ):
        before = _cpu()
        run_child(argv, ROOT, timeout_s=seconds + 30, limits=limits)
        results[name] = _cpu() - before
    samples = seconds / 0.25
    started = time.perf_counter()
    for _ in range(200):
        child_limits.group_usage(1)
    per_sample_ms = (time.perf_counter() - started) / 200 * 1000
    off, on = results["caps off"], results["caps on"]
    print(
        f"caller CPU while supervising a {seconds:g} s child: caps off {off * 1000:.0f} ms, "
        f"caps on {on * 1000:.0f} ms ({on / off if off else float('inf'):.2f}x); "
        f"{samples:.0f} samples, one /proc sample {per_sample_ms:.2f} ms "
        f"({len(list(Path('/proc').glob('[0-9]*')))} processes on the machine)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        abuse(Path(tmp))
    overhead(args.seconds)


if __name__ == "__main__":
    main()
