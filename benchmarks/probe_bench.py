"""Save -> fresh score through the real daemon, against a cold `kernelscope bench`, in one run.

    .venv/bin/python benchmarks/probe_bench.py [--saves 7] [--colds 5] [--debounce-ms 400 0] [--seeds 2]

The vector-add demo workspace (a git workspace with v0 at BLOCK_SIZE 64 and v1 at 1024,
recorded by the real run-iteration workflow) is served by `kernelscope serve` (the console
script editors start) over stdio, trusted, in interpreter mode. Each save rewrites kernel.py
(a new module-level constant: a code change, since a version identical to a recorded one is
"already tried" and not benchmarked again) and sends `textDocument/didSave`; measured are:

- save -> `kernelscope/jobFinished` of the background probe it started, and
- save -> a `textDocument/codeLens` answer showing that probe's result (`last probe: ...`),

median over the saves after the first (the first one also starts the daemon's warm worker),
once per debounce setting (the daemon's default 400 ms, and 0). Beside them, the median wall
time of a cold `kernelscope bench -w WS` of the same workspace (kernel.py vs the reference, as
the command runs by default) and of one measuring what the probe measures (`--baseline` the
last passing kernel). Goal: save -> fresh score <= 0.5x the cold bench. Prints a table; not a
test. Runs on CPUs (TRITON_INTERPRET=1); benchmarks/gpu_check.py has the GPU check.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.stdio_client import StdioClient  # noqa: E402

KERNELSCOPE = str(Path(sys.executable).with_name("kernelscope"))


def build_workspace(root: Path, seeds: int) -> tuple[Path, Path, Path]:
    """The vector-add demo after two recorded iterations; returns the workspace, the store and
    the last passing kernel (v1's kernel.py, written outside the workspace)."""
    from kernelscope.daemon.engine.workflows.demo import kernel_with_block
    from kernelscope.daemon.engine.workflows.git import Git
    from kernelscope.daemon.engine.workflows.iterate import IterateOptions, run_iteration

    example = ROOT / "examples" / "vector_add"
    ws = root / "folder" / "kernel_opt_vector_add"
    ws.mkdir(parents=True)
    for name in ("README.md", "reference.py"):
        shutil.copy(example / name, ws / name)
    git = Git(ws)
    git.init()
    git.commit_paths([ws / "README.md", ws / "reference.py"], "init")
    db = root / "exp.sqlite"
    source = (example / "kernel.py").read_text()
    for block, category in ((64, "baseline"), (1024, "block_size")):
        (ws / "kernel.py").write_text(kernel_with_block(source, block))
        result = run_iteration(
            ws,
            IterateOptions(
                action_category=category,
                action_description=f"BLOCK {block}",
                mode="interpreter",
                seeds=seeds,
                db_url=str(db),
            ),
        )
        assert result.passed, result
    last_passing = root / "last_passing_kernel.py"
    last_passing.write_text((ws / "kernel.py").read_text())
    return ws, db, last_passing


def cold_bench(ws: Path, seeds: int, runs: int, extra: list[str]) -> list[float]:
    """Wall times (s) of `kernelscope bench -w WS`, the console script as a user runs it."""
    argv = [KERNELSCOPE, "bench", "-w", str(ws), "--mode", "interpreter", "--seeds", str(seeds), "--json"]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv + extra, capture_output=True, text=True, timeout=600)
        times.append(time.perf_counter() - start)
        assert json.loads(done.stdout)["passed"], done.stdout[-2000:] + done.stderr[-2000:]
    return times


def daemon_saves(ws: Path, db: Path, seeds: int, saves: int, debounce_ms: int) -> dict[str, Any]:
    folder = ws.parent
    client = StdioClient([KERNELSCOPE, "serve"], log=folder.parent / f"daemon-{debounce_ms}.log")
    uri = (ws / "kernel.py").as_uri()
    try:
        client.request(
            "init",
            "initialize",
            {
                "processId": None,
                "rootUri": folder.as_uri(),
                "capabilities": {"workspace": {"codeLens": {"refreshSupport": True}}},
                "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}],
                "initializationOptions": {
                    "kernelscope": {
                        "trusted": True,
                        "mode": "interpreter",
                        "seeds": seeds,
                        "debounceMs": debounce_ms,
                        "dbUrl": str(db),
                    }
                },
            },
            timeout=60,
        )
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        client.request("lens0", "textDocument/codeLens", {"textDocument": {"uri": uri}}, timeout=60)
        time.sleep(1.0)  # the file watcher starts after initialized
        original = (ws / "kernel.py").read_text()
        finished_s, lens_s, probe_s, warm = [], [], [], []
        for index in range(saves):
            client.messages.clear()
            # a real change (a comment alone is "already tried": identical to v1, not re-run)
            (ws / "kernel.py").write_text(original + f"\n_SAVE = {index}\n")
            start = time.perf_counter()
            client.send(
                {"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": {"uri": uri}}}
            )
            done = client.wait(
                lambda m: (
                    m.get("method") == "kernelscope/jobFinished"
                    and m["params"].get("background")
                    and not m["params"].get("cancelled")
                ),
                300,
            )
            finished_s.append(time.perf_counter() - start)
            result = done["params"]["result"]
            assert result["passed"], result
            warm.append((result.get("env") or {}).get("warm_worker"))
            probe_s.append(result.get("duration_s") or 0.0)
            while True:  # the lens with this probe's result (not stale, not running)
                answer = client.request(
                    f"lens{index}-{time.perf_counter()}",
                    "textDocument/codeLens",
                    {"textDocument": {"uri": uri}},
                )
                titles = [lens["command"]["title"] for lens in answer.get("result") or []]
                if any(t.startswith("last probe: PASS") and "(stale)" not in t for t in titles):
                    break
                time.sleep(0.005)
            lens_s.append(time.perf_counter() - start)
            time.sleep(0.5)
        (ws / "kernel.py").write_text(original)
    finally:
        client.process.kill()
        client.process.wait()
    return {"finished": finished_s, "lens": lens_s, "probe": probe_s, "warm": warm}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--saves", type=int, default=7)
    parser.add_argument("--colds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--debounce-ms", type=int, nargs="+", default=[400, 0])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="probe-bench-") as tmp_name:
        tmp = Path(tmp_name)
        ws, db, last_passing = build_workspace(tmp, args.seeds)
        cold_ref = cold_bench(ws, args.seeds, args.colds, [])
        cold_parent = cold_bench(ws, args.seeds, args.colds, ["--baseline", str(last_passing)])
        sessions = {ms: daemon_saves(ws, db, args.seeds, args.saves, ms) for ms in args.debounce_ms}
    cold = statistics.median(cold_ref)
    like = statistics.median(cold_parent)
    rows = [
        ("cold `kernelscope bench -w WS` (vs reference), median", cold, None),
        ("cold `kernelscope bench -w WS --baseline <last passing>`, median", like, None),
    ]
    for ms, found in sessions.items():
        later_finished = statistics.median(found["finished"][1:])
        later_lens = statistics.median(found["lens"][1:])
        rows += [
            (f"debounce {ms} ms: first save -> jobFinished (starts the worker)", found["finished"][0], None),
            (
                f"debounce {ms} ms: save -> jobFinished, median of later saves",
                later_finished,
                later_finished / cold,
            ),
            (f"debounce {ms} ms: save -> lens shows the new probe, median", later_lens, later_lens / cold),
            (
                f"debounce {ms} ms: the runner's own time in a probe (duration_s), median",
                statistics.median(found["probe"][1:]),
                None,
            ),
        ]
        pids = {w["pid"] for w in found["warm"] if w}
        assert len(pids) == 1 and all(found["warm"]), found["warm"]  # one warm worker served every probe
    print(
        f"\nsave -> fresh score vs cold bench ({args.saves} saves, {args.colds} cold runs, seeds {args.seeds}, interpreter)\n"
    )
    print("| measure | wall s | ratio to cold bench | goal |")
    print("|---|---:|---:|---|")
    for name, value, ratio in rows:
        goal = "" if ratio is None else ("ok (<= 0.5x)" if ratio <= 0.5 else "MISSED (<= 0.5x)")
        print(f"| {name} | {value:.3f} | {'' if ratio is None else f'{ratio:.2f}x'} | {goal} |")
    print(
        f"\ncold runs (s): vs reference {[round(t, 2) for t in cold_ref]}; vs last passing {[round(t, 2) for t in cold_parent]}"
    )
    for ms, found in sessions.items():
        print(f"debounce {ms} ms, save -> jobFinished (s): {[round(t, 3) for t in found['finished']]}")


if __name__ == "__main__":
    main()
