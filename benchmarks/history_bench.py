"""History hints at scale: a synthetic workspace with 50 kernels, 1,000 versions (one commit
each, 10% failed and kept on refs/kernelscope/failed/v<N>, 30% masked) and 100,000 experiments
(1% of them this workspace's), built with `git fast-import` and the store's bulk import.

Measures, in one run: the first (cold) build of the caches; a blame hint for a line and the
tried-values hints for the file when cached (each call still checks the history key: HEAD,
refs, stat of memory/, the store's count); the fingerprint check on save (a new buffer each
time); blame and tried hints for a freshly edited buffer; and the time to recompute the
caches after a history change (a new version committed). Prints p50/p99 against the goals.

    .venv/bin/python benchmarks/history_bench.py [--versions 1000 --kernels 50 --experiments 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from kernelscope.daemon.engine.history.service import HistoryService  # noqa: E402
from kernelscope.daemon.engine.history.source import CACHE_ENV, FACTS  # noqa: E402
from kernelscope.daemon.engine.store import ExperimentStore  # noqa: E402
from kernelscope.protocol.experiment import KernelExperiment  # noqa: E402

BLOCKS = (64, 128, 256, 512, 1024, 2048, 4096)
WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4)
CONFIGS = ("n=4096", "n=1048576", "n=16777216")


def kernel_source(params: list[dict[str, int]]) -> str:
    lines = [
        '"""Synthetic optimization workspace: elementwise kernels, each launched by its wrapper."""',
        "import torch",
        "import triton",
        "import triton.language as tl",
        "",
    ]
    for index, p in enumerate(params):
        lines += [
            "",
            "@triton.jit",
            f"def kernel_{index:02d}(x_ptr, y_ptr, n, BLOCK: tl.constexpr):",
            "    pid = tl.program_id(0)",
            "    offs = pid * BLOCK + tl.arange(0, BLOCK)",
            "    mask = offs < n",
            "    x = tl.load(x_ptr + offs, mask=mask)",
            f"    tl.store(y_ptr + offs, x * {p['scale']} + {index}, mask=mask)",
            "",
            "",
            f"def launch_{index:02d}(x: torch.Tensor, y: torch.Tensor) -> None:",
            "    n = x.numel()",
            f"    grid = (triton.cdiv(n, {p['block']}),)",
            f"    kernel_{index:02d}[grid](x, y, n, BLOCK={p['block']}, num_warps={p['warps']}, num_stages={p['stages']})",
            "",
        ]
    return "\n".join(lines) + "\n"


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def _record(
    number: int, parent: int | None, change: str, passed: bool, masked: bool, rng: random.Random
) -> dict[str, Any]:
    latency = 1000.0 / (1.0 + number * 0.01) * rng.uniform(0.95, 1.05)
    score = 1.0 + number * 0.01
    record: dict[str, Any] = {
        "version": f"v{number}",
        "masked": masked,
        "timestamp": f"2026-08-{1 + number % 28:02d}T{number % 24:02d}:00:00+00:00",
        "performance": {
            "latency_us": round(latency, 3) if passed else None,
            "latency_us_by_shape": {c: round(latency * (i + 1) / 3, 3) for i, c in enumerate(CONFIGS)}
            if passed
            else {},
            "comparison_with_previous": {
                "previous_version": None if parent is None else f"v{parent}",
                "speedup_vs_previous": round(rng.uniform(0.9, 1.2), 4)
                if passed and parent is not None
                else None,
            },
        },
        "optimization": {"action_category": "tuning" if number else "baseline", "action_description": change},
        "correctness": {"rel_err": 1e-6 if passed else 0.67, "status": "PASS" if passed else "FAIL"},
        "quality_gate": {
            "result": "PASS" if passed else "FAIL",
            "failure_reason": None if passed else "wrong_result",
        },
        "pitfalls_and_fixes": []
        if passed
        else [{"error_type": "wrong_result", "error_message": "rel_err 0.67"}],
        "git_commit_hash": None,
        "kernelscope": {
            "mode": "gpu",
            "score_vs_v0": round(score, 4) if passed else None,
            "score_ci": [round(score * 0.98, 4), round(score * 1.02, 4)] if passed else None,
            "score_vs_parent": round(rng.uniform(0.9, 1.2), 4) if passed and parent is not None else None,
            "verdict": "faster" if passed else None,
        },
    }
    return record


def build_workspace(root: Path, kernels: int, versions: int, experiments: int) -> tuple[Path, str]:
    """The workspace (git history through fast-import) and its store (bulk import)."""
    rng = random.Random(15)
    ws = root / "kernel_opt_history"
    ws.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "master"], cwd=ws, check=True)
    params = [{"block": 256, "warps": 4, "stages": 2, "scale": 2} for _ in range(kernels)]
    readme = (ROOT / "examples" / "vector_add" / "README.md").read_bytes()
    stream = bytearray()
    records: list[dict[str, Any]] = []
    last_pass: int | None = None
    when = 1_780_000_000
    for number in range(versions):
        failed = number > 0 and rng.random() < 0.1
        proposal = [dict(p) for p in params]
        change = "baseline"
        if number:
            target = rng.randrange(kernels)
            knob = rng.choice(("block", "warps", "stages", "scale"))
            choices = {"block": BLOCKS, "warps": WARPS, "stages": STAGES, "scale": (2, 3, 4)}[knob]
            before = proposal[target][knob]
            proposal[target][knob] = rng.choice([c for c in choices if c != before])
            change = f"kernel_{target:02d}: {knob} {before} -> {proposal[target][knob]}"
            if failed:
                proposal[target]["scale"] = -1  # the wrong kernel
        record = _record(number, last_pass, change, not failed, rng.random() < 0.3 and number > 0, rng)
        records.append(record)
        identity = b"kernelscope <kernelscope@localhost> %d +0000\n" % (when + number * 60)
        summary = (
            f"V{number}: {'FAIL (wrong_result)' if failed else f'{1 + number * 0.01:.3f}x vs v0'} | tuning"
        )
        stream += b"commit refs/heads/master\nmark :%d\n" % (2 * number + 1)
        stream += b"author " + identity + b"committer " + identity + _data(summary.encode())
        if number:
            stream += b"from :%d\n" % (2 * (number - 1) + 1)
        else:
            stream += b"M 100644 inline README.md\n" + _data(readme)
        if not failed:
            stream += b"M 100644 inline kernel.py\n" + _data(kernel_source(proposal).encode())
            params = proposal
            last_pass = number
        stream += b"M 100644 inline memory/v%d.json\n" % number + _data(json.dumps(record, indent=2).encode())
        if failed:
            stream += b"commit refs/kernelscope/failed/v%d\nmark :%d\n" % (number, 2 * number + 2)
            stream += (
                b"author "
                + identity
                + b"committer "
                + identity
                + _data(f"{summary} (failed kernel)".encode())
            )
            stream += b"from :%d\n" % (2 * (number - 1) + 1)
            stream += b"M 100644 inline kernel.py\n" + _data(kernel_source(proposal).encode())
    marks = root / "marks"
    subprocess.run(
        ["git", "fast-import", "--quiet", f"--export-marks={marks}"], cwd=ws, input=bytes(stream), check=True
    )
    hashes = {int(mark[1:]): sha for mark, sha in (line.split() for line in marks.read_text().splitlines())}
    subprocess.run(["git", "checkout", "-q", "-f", "master"], cwd=ws, check=True)
    for number, record in enumerate(records):
        record["git_commit_hash"] = hashes[2 * number + 1]
        (ws / "memory" / f"v{number}.json").write_text(json.dumps(record, indent=2) + "\n")
    env = ["-c", "user.name=kernelscope", "-c", "user.email=kernelscope@localhost"]
    subprocess.run(["git", "add", "memory"], cwd=ws, check=True)
    subprocess.run(["git", *env, "commit", "-q", "-m", "record commit hashes"], cwd=ws, check=True)

    from expdb_bench import synthetic

    stored = synthetic(experiments)
    mine = [r for index, r in enumerate(stored) if index % 100 == 0]
    for index, experiment in enumerate(mine):
        experiment.workspace = str(ws)
        experiment.kernels = [f"kernel_{index % kernels:02d}"]
        if index < versions and index % 10 != 9:  # one in ten: an experiment without a version
            experiment.memory_version = f"v{index}"
            experiment.metrics = {
                "score_ci": [0.98, 1.02],
                "score_vs_parent": 1.01,
                "configs": {
                    c: {"candidate_ms": 0.5, "speedup": 1.1, "speedup_ci": [1.0, 1.2], "passed": True}
                    for c in CONFIGS
                },
            }
        else:
            experiment.memory_version = None
            experiment.metrics = {"params": {"BLOCK": rng.choice(BLOCKS), "num_warps": rng.choice(WARPS)}}
    db = str(root / "exp.sqlite")
    ExperimentStore(db).import_experiments(KernelExperiment.model_validate(r.model_dump()) for r in stored)
    return ws, db


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def timed(function: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return (time.perf_counter() - start) * 1000.0, value


def commit_new_version(ws: Path, number: int, rng: random.Random) -> None:
    """What `kernelscope iterate` leaves after a passing iteration: kernel.py and the record."""
    text = (ws / "kernel.py").read_text()
    target = rng.randrange(50)
    old = f"kernel_{target:02d}[grid](x, y, n, BLOCK="
    start = text.index(old) + len(old)
    end = text.index(",", start)
    value = rng.choice([b for b in BLOCKS if str(b) != text[start:end]])
    text = text[:start] + str(value) + text[end:]
    grid_start = text.rindex("triton.cdiv(n, ", 0, start) + len("triton.cdiv(n, ")
    grid_end = text.index(")", grid_start)
    text = text[:grid_start] + str(value) + text[grid_end:]
    (ws / "kernel.py").write_text(text)
    record = _record(number, number - 1, f"kernel_{target:02d}: BLOCK -> {value}", True, False, rng)
    (ws / "memory" / f"v{number}.json").write_text(json.dumps(record, indent=2) + "\n")
    env = ["-c", "user.name=kernelscope", "-c", "user.email=kernelscope@localhost"]
    subprocess.run(["git", "add", "kernel.py", f"memory/v{number}.json"], cwd=ws, check=True)
    subprocess.run(["git", *env, "commit", "-q", "-m", f"V{number}: new | tuning"], cwd=ws, check=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout
    record["git_commit_hash"] = head.strip()
    (ws / "memory" / f"v{number}.json").write_text(json.dumps(record, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kernels", type=int, default=50)
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--experiments", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--changes", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="kernelscope-history-bench-") as tmp:
        os.environ[CACHE_ENV] = str(Path(tmp) / "history-cache")  # cold: nothing analysed yet
        started = time.perf_counter()
        ws, db = build_workspace(Path(tmp), args.kernels, args.versions, args.experiments)
        build_s = time.perf_counter() - started
        buffer = (ws / "kernel.py").read_text()
        lines = buffer.count("\n")
        service = HistoryService(ws, db_url=db)
        rows: list[tuple[str, str, str, str]] = []

        cold_history, _ = timed(service.history)
        cold_blame, _ = timed(service.blame, buffer)
        cold_tried, hints = timed(service.tried, buffer)
        cold_fingerprint, _ = timed(service.fingerprint, buffer)
        cold = cold_history + cold_blame + cold_tried + cold_fingerprint
        rows.append(
            (
                "first build of the caches (cold process), ms",
                f"{cold:.0f}",
                f"history {cold_history:.0f} + blame {cold_blame:.0f} + tried {cold_tried:.0f} + fingerprint {cold_fingerprint:.0f}",
                "",
            )
        )

        FACTS._items.clear()  # a daemon restart: the analyses come from the on-disk cache
        restarted = HistoryService(ws, db_url=db)
        restart_ms = sum(
            timed(call, *call_args)[0]
            for call, call_args in (
                (restarted.history, ()),
                (restarted.blame, (buffer,)),
                (restarted.tried, (buffer,)),
                (restarted.fingerprint, (buffer,)),
            )
        )
        rows.append(
            (
                "first build after a daemon restart (analyses from the disk cache), ms",
                f"{restart_ms:.0f}",
                "",
                "",
            )
        )

        def series(function: Any, make_args: Any, count: int) -> tuple[float, float]:
            samples = []
            for index in range(count):
                elapsed, _ = timed(function, *make_args(index))
                samples.append(elapsed)
            return percentiles(samples)

        key_p50, key_p99 = series(lambda: service.key(), lambda i: (), args.calls)
        rows.append(
            (
                "history key check (HEAD, refs, stat memory/, store count), ms",
                f"{key_p50:.3f}",
                f"{key_p99:.3f}",
                "",
            )
        )
        p50, p99 = series(service.blame_line, lambda i: (rng.randrange(lines), buffer), args.calls)
        rows.append(("blame hint for a line, cached, ms", f"{p50:.3f}", f"{p99:.3f}", _goal(p99, 10.0)))
        p50u, p99u = series(
            lambda line, text: service.blame_line(line, text, check=False),
            lambda i: (rng.randrange(lines), buffer),
            args.calls,
        )
        rows.append(
            ("  same, daemon-driven invalidation (check=False), ms", f"{p50u:.3f}", f"{p99u:.3f}", "")
        )
        p50, p99 = series(service.tried, lambda i: (buffer,), args.calls)
        rows.append(
            (
                f"tried-values hints for the file ({len(hints)} spots), cached, ms",
                f"{p50:.3f}",
                f"{p99:.3f}",
                _goal(p99, 10.0),
            )
        )

        def edited(index: int) -> tuple[str]:
            target = rng.randrange(args.kernels)
            marker = f"kernel_{target:02d}[grid](x, y, n, BLOCK="
            start = buffer.index(marker) + len(marker)
            end = buffer.index(",", start)
            return (buffer[:start] + str(rng.choice(BLOCKS) + index % 7) + buffer[end:],)

        p50, p99 = series(service.fingerprint, edited, args.saves)
        rows.append(
            (
                "fingerprint check on save (new text each time), ms",
                f"{p50:.2f}",
                f"{p99:.2f}",
                _goal(p99, 50.0),
            )
        )
        p50, p99 = series(lambda text: (service.blame(text), service.tried(text)), edited, args.saves)
        rows.append(("blame + tried for a newly edited buffer, ms", f"{p50:.2f}", f"{p99:.2f}", ""))

        samples = []
        for change in range(args.changes):
            commit_new_version(ws, args.versions + change, rng)
            text = (ws / "kernel.py").read_text()
            start = time.perf_counter()
            service.history()
            service.blame(text)
            service.tried(text)
            service.fingerprint(text)
            samples.append((time.perf_counter() - start) * 1000.0)
        rows.append(
            (
                f"recompute after a history change (new version; history+blame+tried+fingerprint, {args.changes} changes), ms",
                f"{statistics.median(samples):.0f}",
                f"max {max(samples):.0f}",
                "",
            )
        )
        history = service.history()
        print(
            f"workspace: {args.kernels} kernels, {len(history.versions)} versions "
            f"({sum(1 for f in history.versions.values() if not f.passed)} failed, "
            f"{sum(1 for f in history.versions.values() if f.masked)} masked), {lines} lines of kernel.py, "
            f"{args.experiments:,} experiments ({len(history.unversioned_experiments)} unversioned in this workspace); "
            f"built in {build_s:.1f} s"
        )
        print()
        print("| measure | p50 | p99 | goal |")
        print("|---|---:|---:|---|")
        for name, p50_text, p99_text, goal in rows:
            print(f"| {name} | {p50_text} | {p99_text} | {goal} |")


def _goal(value: float, limit: float) -> str:
    return f"{'ok' if value <= limit else 'MISSED'} (p99 <= {limit:g} ms)"


if __name__ == "__main__":
    main()
