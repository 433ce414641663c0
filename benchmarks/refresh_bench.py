"""New memory file -> refreshed lens, through the real daemon, at 1,000 versions.

    .venv/bin/python benchmarks/refresh_bench.py [--versions 1000] [--records 30] [--kernels 50]

A workspace with 1,000 memory versions, a kernel.py with 50 kernels and a store holding their
experiments is served by `kernelscope serve` over stdio (a client that supports
`workspace/codeLens/refresh`). Each round an agent writes `memory/v<N>.json`; measured are

- write -> the daemon's `workspace/codeLens/refresh` request (its file watcher: watchfiles
  groups changes for 50 ms before it reports them),
- refresh request -> a `textDocument/codeLens` answer showing `next v<N+1>` (the daemon's own
  work: scan memory/, score, read the store's per-kernel digest, render), and
- write -> that answer (what the user waits for),

median over the rounds, for the daemon as it runs (incremental reads: one file read per new
record, scores kept per version) and beside it with KERNELSCOPE_FULL_RESCAN=1 (every memory
file read and scored again on each refresh, as before), plus the in-process time of one full
`MemoryManager.scan()` of the workspace. Goal: the refreshed lens within 50 ms of the daemon
learning of the file. Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.stdio_client import StdioClient  # noqa: E402

KERNELSCOPE = str(Path(sys.executable).with_name("kernelscope"))


def build_workspace(root: Path, versions: int, kernels: int) -> tuple[Path, str]:
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.protocol.experiment import KernelExperiment

    ws = root / "folder" / "kernel_opt_big"
    (ws / "memory").mkdir(parents=True)
    (ws / "README.md").write_text((ROOT / "examples" / "vector_add" / "README.md").read_text())
    names = [f"kernel_{i:02d}" for i in range(kernels)]
    body = ["import triton", "import triton.language as tl", ""]
    for name in names:
        body += ["", "@triton.jit", f"def {name}(x_ptr, BLOCK: tl.constexpr):", "    pass", ""]
    (ws / "kernel.py").write_text("\n".join(body))
    rng = random.Random(1)
    for number in range(versions):
        (ws / "memory" / f"v{number}.json").write_text(json.dumps(record(number, rng), indent=2))
    db = str(root / "exp.sqlite")
    ExperimentStore(db).import_experiments(
        [
            KernelExperiment(
                id=f"e{index}",
                change_summary=f"attempt {index}",
                score=rng.uniform(0.5, 2.0),
                status="done",
                workspace=str(ws),
                kernels=[names[index % kernels]],
                memory_version=f"v{index % versions}",
            )
            for index in range(versions)
        ]
    )
    return ws, db


def record(number: int, rng: random.Random) -> dict[str, Any]:
    return {
        "version": f"v{number}",
        "masked": rng.random() < 0.3 and number > 0,
        "performance": {
            "latency_us": round(rng.uniform(40, 70), 2),
            "bandwidth_gbps": rng.uniform(3000, 4300),
        },
        "optimization": {"action_category": "tuning", "action_description": f"attempt {number}"},
        "quality_gate": {"result": "PASS" if rng.random() > 0.1 else "FAIL"},
        "pitfalls_and_fixes": [],
    }


def session(
    ws: Path, db: str, rounds: int, full_rescan: bool, opened: bool = False
) -> dict[str, list[float]]:
    folder = ws.parent
    env = {**os.environ, "KERNELSCOPE_FULL_RESCAN": "1" if full_rescan else "0"}
    client = StdioClient([KERNELSCOPE, "serve"], env=env, log=folder.parent / "daemon.log")
    uri = (ws / "kernel.py").as_uri()
    rng = random.Random(2)
    found: dict[str, list[float]] = {"watcher": [], "daemon": [], "total": []}
    try:
        client.request(
            "init",
            "initialize",
            {
                "processId": None,
                "rootUri": folder.as_uri(),
                "capabilities": {"workspace": {"codeLens": {"refreshSupport": True}}},
                "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}],
                "initializationOptions": {"kernelscope": {"dbUrl": db, "trusted": False}},
            },
            timeout=60,
        )
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        if opened:  # kernel.py open: each record also makes the verdict on its text again
            document = {
                "uri": uri,
                "languageId": "python",
                "version": 1,
                "text": (ws / "kernel.py").read_text(),
            }
            client.send(
                {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}}
            )
        client.request("cold", "textDocument/codeLens", {"textDocument": {"uri": uri}}, timeout=120)
        time.sleep(3.0 if opened else 1.5)  # the watcher is running (and the history built)
        number = len(list((ws / "memory").glob("v*.json")))
        for index in range(rounds):
            with client.arrived:
                client.messages.clear()
            data = json.dumps(record(number, rng), indent=2)
            start = time.perf_counter()
            (ws / "memory" / f"v{number}.json").write_text(data)  # an agent records a version
            client.wait(lambda m: m.get("method") == "workspace/codeLens/refresh", 30)
            refreshed = time.perf_counter()
            answer = client.request(f"lens{index}", "textDocument/codeLens", {"textDocument": {"uri": uri}})
            done = time.perf_counter()
            titles = [lens["command"]["title"] for lens in answer.get("result") or []]
            assert any(f"next v{number + 1}" in t for t in titles), titles[:2]
            found["watcher"].append(refreshed - start)
            found["daemon"].append(done - refreshed)
            found["total"].append(done - start)
            number += 1
            # agents write versions minutes apart; keep rounds independent (opened: the verdict
            # made again, a history rebuild of ~250 ms at 1,000 versions, has ended)
            time.sleep(1.0 if opened else 0.3)
    finally:
        client.process.kill()
        client.process.wait()
    return found


def full_scan_ms(ws: Path, runs: int = 5) -> float:
    from kernelscope.daemon.engine.memory.records import MemoryManager

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        MemoryManager(ws).scan()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--kernels", type=int, default=50)
    parser.add_argument("--records", type=int, default=30, help="new memory files written per session")
    parser.add_argument(
        "--opened",
        action="store_true",
        help="kernel.py opened first (didOpen): each record also makes its verdict again; compared "
        "with a session that did not open it instead of with the full rescan",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="refresh-bench-") as tmp_name:
        ws, db = build_workspace(Path(tmp_name), args.versions, args.kernels)
        scan_ms = full_scan_ms(ws)
        incremental = session(ws, db, args.records, full_rescan=False, opened=args.opened)
        full = session(ws, db, args.records, full_rescan=not args.opened)

    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    print(
        f"\nnew memory file -> refreshed lens at {args.versions} versions, {args.kernels} kernels "
        f"(median of {args.records} new records)\n"
    )
    other = "not opened" if args.opened else "full rescan"
    print(
        f"| measure | {'opened' if args.opened else 'incremental reads'} (ms) | {other} (ms) | ratio | goal |"
    )
    print("|---|---:|---:|---:|---|")
    for key, name, goal in (
        ("daemon", "refresh request -> fresh codeLens answer (the daemon's work)", 50.0),
        ("watcher", "file written -> refresh request (watcher, 50 ms grouping)", None),
        ("total", "file written -> fresh codeLens answer", None),
    ):
        a, b = ms(incremental[key]), ms(full[key])
        verdict = "" if goal is None else ("ok (<= 50 ms)" if a <= goal else "MISSED (<= 50 ms)")
        print(f"| {name} | {a:.1f} | {b:.1f} | {a / b:.2f}x | {verdict} |")
    print(f"| one full `MemoryManager.scan()` in-process | | {scan_ms:.1f} | | |")
    print(
        "\ndaemon's work, every round (ms): incremental",
        [round(v * 1000, 1) for v in incremental["daemon"]],
        "full",
        [round(v * 1000, 1) for v in full["daemon"]],
    )


if __name__ == "__main__":
    main()
