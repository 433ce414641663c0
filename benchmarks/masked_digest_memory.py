"""Where the lens's extra memory on a workspace with masked versions goes.

lsp_bench.py's resident memory after the first lens is ~4 MB higher since the lens counts
masked versions apart (docs/benchmarks.md): with masks, the per-kernel digest is recomputed
from the workspace's history instead of read from the `kernel_stats` rows. This measures, in a
fresh process on lsp_bench's store (50 kernels, 1,000 versions of which ~30% masked, 100,000
experiments), one `kernel_summaries` call through the masks: its resident memory growth, the
Python objects it leaves (tracemalloc), and the growth again with SQLite's page cache capped at
1 MiB on the connection, to tell the page cache from the rest. Prints a table; not a test.

    .venv/bin/python benchmarks/masked_digest_memory.py
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 2**20


def measure(folder: Path, cache_kib: int | None) -> None:
    """In this (fresh) process: the digest without masks, then through them; prints one row."""
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.daemon.engine.workspace import masked

    ws = folder / "kernel_opt_big"
    store = ExperimentStore(str(folder / "exp.sqlite"))
    if cache_kib is not None:
        with store._reading() as conn:
            conn.exec_driver_sql(f"PRAGMA cache_size=-{cache_kib}")
    store.kernel_summaries(str(ws))
    hidden = masked.masked_versions_at(ws)
    gc.collect()
    before = _rss_mb()
    tracemalloc.start()
    store.kernel_summaries(str(ws), hidden)
    gc.collect()
    python_mb = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    cache = "store's (64 MiB)" if cache_kib is None else f"{cache_kib} KiB"
    print(f"| {cache} | {len(hidden)} | {_rss_mb() - before:.1f} | {python_mb:.2f} |")


def main() -> None:
    if len(sys.argv) == 3:  # the child: folder, cache
        measure(Path(sys.argv[1]), None if sys.argv[2] == "default" else int(sys.argv[2]))
        return
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from lsp_bench import build_workspace

    with tempfile.TemporaryDirectory() as tmp:
        build_workspace(Path(tmp), 50, 1000, 100_000)
        print("| page cache | masked versions | resident growth, MB | Python objects left, MB |")
        print("|---|---:|---:|---:|")
        for cache in ("default", "1024", "default", "1024"):
            subprocess.run([sys.executable, __file__, tmp, cache], check=True)


if __name__ == "__main__":
    main()
