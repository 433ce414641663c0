"""A probe: kernel.py measured against the best recorded version, as the daemon does after a
save (and `kernelscope.benchmark` on demand), and the rules that say which versions those are.

A version can be a baseline when its quality gate passed and its record names the commit
holding its kernel.py. The last passing one is the newest such (run-iteration times a new
version against it, as its parent); the best is the one with the highest score vs v0
(memory/scores.py), the question a probe answers being "is this better than what we have".
With none, the probe is timed against the reference.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernelscope.daemon.engine.history.version_code import version_commit
from kernelscope.daemon.engine.memory.git_place import find_repository
from kernelscope.daemon.engine.memory.records import MemoryEntry
from kernelscope.daemon.engine.memory.scores import best_version
from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
from kernelscope.daemon.engine.run.warm_worker import WarmWorkers
from kernelscope.daemon.engine.workflows.git import Git
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.protocol.bench import BenchResult
from kernelscope.protocol.workspace import ReadmeInfo


def _committed_passing(entries: list[MemoryEntry]) -> list[MemoryEntry]:
    return [
        e
        for e in entries
        if e.record is not None
        and e.record.gate_passed
        and isinstance(e.record.git_commit_hash, str)
        and e.record.git_commit_hash
    ]


def last_passing(entries: list[MemoryEntry]) -> MemoryEntry | None:
    """The newest version whose gate passed and whose record names its commit."""
    passing = _committed_passing(entries)
    return passing[-1] if passing else None


def best_passing(entries: list[MemoryEntry], readme: ReadmeInfo | None) -> MemoryEntry | None:
    """The best committed passing version (scores.best_version, the rule of every best)."""
    passing = {e.version: e for e in _committed_passing(entries)}
    best, _ = best_version(entries, readme.primary_kind if readme else None, among=set(passing))
    return passing[best] if best is not None else None


def kernel_at(git: Git, kernel_path: Path, entry: MemoryEntry | None, tmp: Path, name: str) -> Path | None:
    """The version's kernel.py from its commit, written into `tmp` (None: no commit or no file)."""
    if entry is None or entry.record is None or not isinstance(entry.record.git_commit_hash, str):
        return None
    content = git.show_file(entry.record.git_commit_hash, kernel_path)
    if content is None:
        return None
    path = tmp / f"{name}_{entry.version}.py"
    path.write_text(content)
    return path


def v0_kernel_at(git: Git, kernel_path: Path, entry: MemoryEntry | None, tmp: Path) -> Path | None:
    """v0's kernel.py, written into `tmp`, from v0's commit as the history finds it
    (history/version_code.py: the commit its record names, a `V0: ...` commit, or the commit
    that added v0.json and no other record together with kernel.py). None: no v0 code to be
    found, and no other kernel is taken for it."""
    if entry is None or entry.record is None:
        return None
    commit = version_commit(git.workdir, entry)
    content = git.show_file(commit, kernel_path) if commit else None
    if content is None:
        return None
    path = tmp / f"baseline_{entry.version}.py"
    path.write_text(content)
    return path


@dataclass(frozen=True)
class ProbeOptions:
    """How to run a probe: the user's settings of the workspace (never the workspace's own)."""

    mode: str = "auto"
    python: str | None = None
    timeout_s: float = 900.0
    memory_limit_mb: int | None = None
    seeds: int | None = None  # None: the evaluator's own count (the runner's --seeds)
    executor: str = "local"  # local | ray
    ray_address: str | None = None


def run_probe(
    root: Path,
    options: ProbeOptions,
    candidate: Path | None = None,
    cancel: threading.Event | None = None,
    workers: WarmWorkers | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> BenchResult:
    """kernel.py (or `candidate`) against the best recorded version, on the team's Ray cluster
    or forked by a warm worker of this process (cold when none can start)."""
    # The best version's kernel.py is written out for the runner: in the system's temp folder
    # for a local run (a probe writes nothing in the workspace, .git included); for Ray,
    # inside the workspace's .git when there is one, since workers on other machines see the
    # workspace through a shared filesystem, never this machine's /tmp.
    repository = find_repository(root)
    shared = repository.git_dir / "kernelscope" if options.executor == "ray" and repository else None
    if shared is not None:
        shared.mkdir(exist_ok=True)
    workspace = Workspace(root)
    readme = workspace.readme() if workspace.readme_path.is_file() else None
    with tempfile.TemporaryDirectory(prefix="probe-", dir=shared) as tmp:
        best = best_passing(workspace.memory.scan(), readme)
        baseline = kernel_at(Git(root), workspace.kernel_path, best, Path(tmp), "best")
        request = BenchRequest(
            workspace=root,
            candidate=candidate,
            baseline=str(baseline) if baseline else "reference",
            mode=options.mode,
            python=options.python,
            timeout_s=options.timeout_s,
            memory_limit_mb=options.memory_limit_mb,
            seeds=options.seeds,
            on_progress=on_progress,
        )
        if options.executor == "ray":
            from kernelscope.daemon.engine.run.executors import RayExecutor

            result = RayExecutor(options.ray_address).run_many([request], cancel=cancel)[0]
        else:
            result = run_benchmark(request, cancel=cancel, workers=workers)
    if baseline is not None and best is not None and result.baseline == str(baseline):
        result.baseline_version = best.version  # (a kind's own evaluator compares with its own)
    return result
