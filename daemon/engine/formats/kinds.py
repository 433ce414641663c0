"""Which kind of workspace a folder is, decided from the files present, and what it states
as targets, wherever it states them.

Kinds (see the README's "Workspace kinds"):
- `sol-execbench`: `definition.json` + `workload.jsonl` (+ `reference.py` with `run()`), as
  atrex's `reference/sol_seed.py` lays out a SOL-ExecBench op; goal: minimize the geomean
  latency over the workloads.
- `atrex-bench`: Atrex-Bench problems (`shapes.json` + `input.py`, or `agent_problem.json`),
  measured by the workspace's own `test_kernel.py`.
- `kernelbench`: the reference defines `class Model` and `get_inputs()` (KernelBench files).
- `native`: the reference follows kernelscope's contract (`CONFIGS`, `make_inputs`, `reference`).
- `atrex-v0.1`: the seed's layout (README with stop conditions, kernel.py, memory/), measured by
  its own gate command.

The restart check compares a digest over every target that exists (README target, goal,
config and stop-condition text, and the ground-truth files), never a digest of nothing.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from kernelscope.daemon.engine.formats import atrex
from kernelscope.protocol.workspace import ReadmeInfo, TargetSource, WorkspaceKind, WorkspaceProfile

# Files whose content is a target: an agent must not edit them (hashed into the digest).
GROUND_TRUTH_FILES = ("definition.json", "workload.jsonl", "config.json", "shapes.json", "agent_problem.json")
NO_TARGETS = "no targets stated"

_HARNESS: dict[str, str] = {
    "sol-execbench": "SOL-ExecBench adapter: one configuration per workload.jsonl line, destination-passing "
    "run(*inputs, *outputs), the workloads' own tolerances",
    "atrex-bench": "the workspace's own evaluator as the gate (--gate-command 'python test_kernel.py')",
    "kernelbench": "KernelBench contract: Model/get_inputs/get_init_inputs vs ModelNew",
    "native": "kernelscope's contract: reference.py with CONFIGS, make_inputs, reference",
    "atrex-v0.1": "the workspace's own gate command (test_kernel.py); timing needs a reference.py",
}


def _top_level_names(path: Path) -> set[str]:
    """Names a Python file defines at top level, by AST (never imported)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def reference_path(root: Path, readme: ReadmeInfo | None) -> Path:
    name = (
        readme.bench.get("reference") if readme and isinstance(readme.bench.get("reference"), str) else None
    )
    return root / (name or "reference.py")


def detect_kind(root: Path, readme: ReadmeInfo | None) -> WorkspaceKind:
    if (root / "definition.json").is_file() and (root / "workload.jsonl").is_file():
        return "sol-execbench"
    if (root / "agent_problem.json").is_file() or (
        (root / "shapes.json").is_file() and (root / "input.py").is_file()
    ):
        return "atrex-bench"
    names = _top_level_names(reference_path(root, readme))
    if {"Model", "get_inputs"} <= names:
        return "kernelbench"
    if {"CONFIGS", "make_inputs", "reference"} <= names or (readme is not None and readme.machine_block):
        return "native"
    if (root / "memory").is_dir() or (readme is not None and readme.stop_conditions):
        return "atrex-v0.1"
    return "native"


def _workload_count(root: Path) -> int | None:
    path = root / "workload.jsonl"
    try:
        return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    except OSError:
        return None


def _config_stop_conditions(root: Path) -> list[TargetSource]:
    """Stop-like settings a `config.json` states (iterations limits and the like)."""
    try:
        data = json.loads((root / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    found = []
    for key in ("max_iters", "max_iterations", "max_stall", "target_util", "token_budget"):
        if key in data:
            found.append(TargetSource(text=f"{key} = {data[key]}", source="config.json"))
    return found


def targets_digest(root: Path, readme: ReadmeInfo | None) -> tuple[str, list[str]]:
    """sha256 over the README's target text and every ground-truth file present, with the
    list of what it covers. With nothing stated at all, the digest says so (it is never the
    hash of an empty string), so a restart check can tell "unchanged" from "nothing to compare"."""
    hasher = hashlib.sha256()
    sources = []
    if readme is not None and readme.targets_digest:
        hasher.update(b"README.md\0" + readme.targets_digest.encode())
        sources.append("README.md (target, goal, config, stop-condition and hardware-spec text)")
    for name in GROUND_TRUTH_FILES:
        path = root / name
        if path.is_file():
            hasher.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).hexdigest().encode())
            sources.append(name)
    if not sources:
        hasher.update(NO_TARGETS.encode())
    return hasher.hexdigest(), sources


def profile(root: Path, readme: ReadmeInfo | None) -> WorkspaceProfile:
    kind = detect_kind(root, readme)
    digest, sources = targets_digest(root, readme)
    conditions: list[TargetSource] = []
    if readme is not None:
        where = "the machine block" if readme.machine_block else "README.md"
        conditions += [
            TargetSource(
                text=c.text or f"{c.kind} {c.comparator} {c.value:g}{c.unit}", source=f"{where} line {c.line}"
            )
            if c.line
            else TargetSource(text=c.text or f"{c.kind} {c.comparator} {c.value:g}{c.unit}", source=where)
            for c in readme.stop_conditions
        ]
        conditions += [TargetSource(text=text, source="README.md") for text in readme.stated_stop_conditions]
    conditions += _config_stop_conditions(root)
    goal = readme.goal if readme else None
    if goal is None and kind == "sol-execbench":
        goal = "minimize the geomean latency over the workloads"
    workloads = _workload_count(root) if kind == "sol-execbench" else None
    return WorkspaceProfile(
        kind=kind,
        harness=_HARNESS[kind],
        target_platform=readme.target.platform if readme else None,
        framework=readme.target.framework if readme else None,
        goal=goal,
        workload_count=workloads if workloads is not None else (readme.workload_count if readme else None),
        stop_conditions=conditions,
        targets_digest=digest,
        digest_sources=sources,
        supervisor=atrex.supervisor(root),
    )
