"""Benchmark fan-out: 16 candidates on a local Ray with 2 workers vs the local executor, same run.

    .venv/bin/python benchmarks/fanout_bench.py [--candidates 16] [--workers 2]

Candidates are vector-add variants (BLOCK_SIZE 32..4096) from examples/vector_add, measured in
interpreter mode against kernel_slow.py (this machine has no GPU; on a GPU cluster pass
--mode gpu). Prints wall time per executor, the ranking agreement, and the scheduling
overhead per task: the executor's busy time (wall x slots) not spent inside the harness
(the sum of the runners' own durations), divided by the number of tasks.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from kernelscope.daemon.engine.run.bench import BenchRequest
from kernelscope.daemon.engine.run.executors import LocalExecutor, RayExecutor
from kernelscope.daemon.engine.run.fanout import bench_candidates
from kernelscope.daemon.engine.workflows.demo import kernel_with_block

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--candidates", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--mode", default="interpreter")
    parser.add_argument(
        "--config-groups", type=int, default=2, help="also run Ray with each candidate split in N tasks"
    )
    args = parser.parse_args()
    blocks = [32 * (2 ** (i % 8)) for i in range(args.candidates)]  # 32..4096, repeated
    with tempfile.TemporaryDirectory() as tmp_name:
        ws = Path(tmp_name) / "ws"
        shutil.copytree(ROOT / "examples" / "vector_add", ws)
        source = (ws / "kernel.py").read_text()
        candidates = []
        for index, block in enumerate(blocks):
            path = ws / f"candidate_{index:02d}_block{block}.py"
            path.write_text(kernel_with_block(source, block))
            candidates.append(path)
        template = BenchRequest(
            workspace=ws, baseline=str(ws / "kernel_slow.py"), mode=args.mode, seeds=1, timeout_s=600
        )
        local = bench_candidates(template, candidates, LocalExecutor(slots=1), "local (1 slot)")
        ray_executor = RayExecutor(num_cpus=args.workers)
        remote = bench_candidates(template, candidates, ray_executor, f"ray ({args.workers} workers)")
        split = None
        if args.config_groups > 1:
            split = bench_candidates(
                template,
                candidates,
                ray_executor,
                f"ray, {args.config_groups} groups each",
                config_groups=args.config_groups,
            )

    def overhead(report, slots: int, groups: int = 1) -> float:  # type: ignore[no-untyped-def]
        inside = sum(r.result.duration_s or 0.0 for r in report.ranking)  # merged: summed groups
        return (report.wall_s * slots - inside) / (len(report.ranking) * groups)

    same_verdicts = [r.passed for r in sorted(local.ranking, key=lambda r: r.candidate)] == [
        r.passed for r in sorted(remote.ranking, key=lambda r: r.candidate)
    ]
    top_local = {r.candidate for r in local.ranking[:4]}
    top_remote = {r.candidate for r in remote.ranking[:4]}
    print(f"{args.candidates} candidates, mode {args.mode}")
    print(f"{'executor':<22} {'wall s':>8} {'overhead/task s':>16}")
    print(f"{local.executor:<22} {local.wall_s:>8.1f} {overhead(local, 1):>16.2f}")
    print(f"{remote.executor:<22} {remote.wall_s:>8.1f} {overhead(remote, args.workers):>16.2f}")
    print(
        f"speed-up of Ray over local: {local.wall_s / remote.wall_s:.2f}x; same verdicts: {same_verdicts}; "
        f"same top-4 set: {top_local == top_remote}"
    )
    if split is not None:
        print(
            f"{split.executor:<22} {split.wall_s:>8.1f} {overhead(split, args.workers, args.config_groups):>16.2f}"
        )
        split_verdicts = [r.passed for r in sorted(split.ranking, key=lambda r: r.candidate)]
        print(
            f"configuration groups vs one task per candidate: {remote.wall_s / split.wall_s:.2f}x; "
            f"same verdicts: {split_verdicts == [r.passed for r in sorted(remote.ranking, key=lambda r: r.candidate)]}; "
            f"same top-4 set: {top_remote == {r.candidate for r in split.ranking[:4]}}"
        )


if __name__ == "__main__":
    main()
