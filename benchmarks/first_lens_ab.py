"""The first codeLens of a fresh daemon, two installed trees interleaved (a before/after check).

    .venv/bin/python benchmarks/first_lens_ab.py --before /tmp/before [--after .] [--daemons 9] [--announced]

Each tree is a checkout with its own `.venv` (`git worktree add /tmp/before <commit>` and
`scripts/bootstrap.sh dev,bench` there). Each builds lsp_bench.py's workspace (50 kernels, 1,000
memory versions, a store of 100,000 experiments) with its own code, so a store schema that
changed between the trees is written by the tree that reads it. Then, --daemons times, one fresh
`kernelscope serve` of each tree in turn: initialize, initialized, a second's rest, and the
kernel.py lens request timed; with --announced, `didOpen` first and the request 375 ms later (as
VS Code asks), else unannounced (everything read on the spot: the row the renovation made
slower). The trees alternate, so a machine that slows down slows both. Prints each tree's median
and samples; not a test.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from lsp_bench import ENV, first_lens  # noqa: E402

KERNELS = 50

BUILD = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/benchmarks")
import lsp_bench
ws, db = lsp_bench.build_workspace(Path(sys.argv[2]), {kernels}, 1000, 100000)
print(ws)
print(db)
"""


class Tree:
    """One checkout: its daemon command and the workspace its own code built."""

    def __init__(self, name: str, root: Path, scratch: Path) -> None:
        self.name = name
        python = root / ".venv" / "bin" / "python"
        if not python.is_file():
            raise SystemExit(f"{root} has no .venv: run scripts/bootstrap.sh dev,bench there first")
        self.argv = [str(python.with_name("kernelscope")), "serve"]
        self.folder = scratch / name
        self.folder.mkdir()
        built = subprocess.run(
            [str(python), "-c", BUILD.format(kernels=KERNELS), str(root), str(self.folder)],
            env=ENV,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        self.kernel = Path(built[-2]) / "kernel.py"
        self.db = built[-1]

    def first_lens(self, announced: bool) -> float:
        return first_lens(
            self.kernel.parent, self.folder, self.db, KERNELS, announced, argv=self.argv, file_lenses=None
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (with its .venv)")
    parser.add_argument("--after", type=Path, default=ROOT, help="default: this checkout")
    parser.add_argument("--daemons", type=int, default=9, help="fresh daemons per tree")
    parser.add_argument("--announced", action="store_true", help="didOpen first, the request 375 ms later")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kernelscope-lens-ab-") as scratch:
        trees = [
            Tree("before", args.before.resolve(), Path(scratch)),
            Tree("after", args.after.resolve(), Path(scratch)),
        ]
        for tree in trees:
            tree.first_lens(args.announced)  # writes bytecode caches; not counted
        samples: dict[str, list[float]] = {tree.name: [] for tree in trees}
        for _ in range(args.daemons):
            for tree in trees:
                samples[tree.name].append(tree.first_lens(args.announced))
    kind = "375 ms after didOpen" if args.announced else "no didOpen (cold)"
    print(f"first codeLens, {kind}, {args.daemons} fresh daemons per tree, interleaved")
    for name, values in samples.items():
        shown = ", ".join(f"{v:.1f}" for v in values)
        print(f"{name:<7} median {statistics.median(values):7.1f} ms   ({shown})")
    ratio = statistics.median(samples["after"]) / statistics.median(samples["before"])
    print(f"after / before: {ratio:.2f}x")


if __name__ == "__main__":
    main()
