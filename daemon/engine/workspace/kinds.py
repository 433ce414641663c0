"""A folder's profile: its kind (by the one rule in protocol/kinds.py, told what the README
says) and what it states as targets, wherever it states them.

The restart check compares a digest over every target that exists (README target, goal,
config and stop-condition text, and the ground-truth files), never a digest of nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine import load_json
from kernelscope.daemon.engine.workspace import atrex
from kernelscope.protocol import kinds, workspace_files
from kernelscope.protocol.sol_workloads import WORKLOADS, WorkloadsError, parse_workloads
from kernelscope.protocol.workspace import ReadmeInfo, TargetSource, WorkspaceProfile

SHAPES_FILE = "shapes.json"  # Atrex-Bench's workloads: shape id -> {input_kwargs, ...}
# Files whose content is a target: an agent must not edit them (hashed into the digest). The
# Atrex-Bench operator files are those atrex protects as immutable after V0
# (IMMUTABLE_BASELINE_PATHS in its orchestrator/constants.py).
GROUND_TRUTH_FILES = (
    "definition.json",
    "workload.jsonl",
    "config.json",
    SHAPES_FILE,
    "agent_problem.json",
    "input.py",
    "metadata.json",
    "roofline.json",
    "valid.py",
)
# Why a generalized Atrex-Bench workspace has no workload count to show.
PRIVATE_WORKLOADS = (
    "private: a generalized Atrex-Bench workspace (agent_problem.json) keeps its exact evaluator "
    "cases in atrex's sandbox; shape ids are opaque"
)
NO_TARGETS = "no targets stated"


def atrex_bench_shapes(root: Path) -> dict[str, dict[str, Any]] | None:
    """Atrex-Bench's `shapes.json`: shape id -> its `input_kwargs` ({} when an entry has none),
    or None when the file is absent, unreadable, too large or not a JSON object. The one
    reader of it: the profile counts its entries, the gate names configurations by them."""
    path = root / SHAPES_FILE
    with contextlib.suppress(OSError, UnicodeDecodeError, json.JSONDecodeError):
        if path.is_file():  # (one past workspace_files.MAX_FILE_BYTES is not read)
            found = load_json(workspace_files.read_text(path))
            if isinstance(found, dict):
                return {str(sid): _input_kwargs(shape) for sid, shape in found.items()}
    return None


def sol_workloads(root: Path) -> tuple[list[dict[str, Any]] | None, str | None]:
    """SOL-ExecBench's `workload.jsonl` as the harness reads it (protocol.sol_workloads: the
    same lines, order and `line<N>` names), or None and why: (None, None) when the file is
    absent, (None, the reason) when it is unreadable or a line is not a workload. The daemon's
    one reader of it: the profile counts the workloads, the trace export and the gate's report
    name configurations by them."""
    path = root / WORKLOADS
    try:
        text = workspace_files.read_text(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:  # (its message names the file and why: RefusedFile's too)
        return None, str(exc)
    except UnicodeDecodeError as exc:
        return None, f"{WORKLOADS} is not UTF-8 text: {exc}"
    try:
        return parse_workloads(text), None
    except WorkloadsError as exc:
        return None, str(exc)


def _input_kwargs(shape: Any) -> dict[str, Any]:
    kwargs = shape.get("input_kwargs") if isinstance(shape, dict) else None
    return kwargs if isinstance(kwargs, dict) else {}


def reference_path(root: Path, readme: ReadmeInfo | None) -> Path:
    name = (
        readme.bench.get("reference") if readme and isinstance(readme.bench.get("reference"), str) else None
    )
    return root / (name or "reference.py")


def detect_kind(root: Path, readme: ReadmeInfo | None) -> str:
    """The folder's kind by the one rule (protocol/kinds.py), told what the README says."""
    return kinds.detect(folder_of(root, readme)).name


def declared_framework(root: Path, readme: ReadmeInfo | None) -> str | None:
    """Why the folder's solution asks no Triton kernel (protocol/kinds.py's rule), or None."""
    return kinds.framework_solution(folder_of(root, readme))


def undeclared_triton(root: Path, readme: ReadmeInfo | None, text: str) -> tuple[int | None, str] | None:
    """The warning of protocol/sol_solution.py's `undeclared_triton` for kernel.py's `text`."""
    from kernelscope.protocol.sol_solution import undeclared_triton as rule

    return rule(declared_framework(root, readme), text, readme.target.framework if readme else None)


def undeclared_triton_of(root: Path, readme: ReadmeInfo | None, candidate: Path | None) -> list[str]:
    """The same warning for a bench result, on the candidate file (default kernel.py)."""
    try:
        text = workspace_files.read_text(candidate or root / "kernel.py", errors="replace")
    except OSError:
        return []
    found = undeclared_triton(root, readme, text)
    return [found[1]] if found else []


def folder_of(root: Path, readme: ReadmeInfo | None) -> kinds.Folder:
    """What the kinds rule looks at, with the README's facts filled in."""
    return kinds.Folder(
        root,
        reference_path(root, readme),
        machine_block=bool(readme and readme.machine_block),
        stop_conditions=bool(readme and readme.stop_conditions),
    )


def _workload_count(root: Path, kind: str, readme: ReadmeInfo | None) -> tuple[int | None, str | None]:
    """The workloads the kind's own files list (SOL-ExecBench's `workload.jsonl` lines,
    Atrex-Bench's `shapes.json` entries), else the count the README states, else None, and why
    when they exist but cannot be counted: private, or a workload.jsonl the harness refuses
    (then no README count either: the problem cannot run as it stands)."""
    stated = readme.workload_count if readme is not None else None
    if kind == "sol-execbench":
        workloads, why = sol_workloads(root)
        if workloads is not None:
            return len(workloads), None
        return (None, why) if why is not None else (stated, None)
    if kind == "atrex-bench":
        shapes = atrex_bench_shapes(root)
        if shapes is not None:
            return len(shapes), None
        if stated is not None:
            return stated, None
        private = not (root / SHAPES_FILE).exists() and (root / "agent_problem.json").is_file()
        return None, PRIVATE_WORKLOADS if private else None
    return stated, None


def _json_object(path: Path) -> dict[str, Any]:
    try:
        data = load_json(workspace_files.read_text(path))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _problem_dtype(root: Path, kind: str) -> str | None:
    """The dtype the kind's own files state where upstream puts it: Atrex-Bench's
    `metadata.json` `"dtype"` (`bf16`); SOL-ExecBench's `definition.json` inputs' dtypes, the
    tensors' floating ones (a scalar eps, an index tensor's int64 are no problem dtype),
    joined when they differ."""
    if kind == "atrex-bench":
        dtype = _json_object(root / "metadata.json").get("dtype")
        return dtype if isinstance(dtype, str) and dtype.strip() else None
    if kind == "sol-execbench":
        inputs = _json_object(root / "definition.json").get("inputs")
        specs = (
            [spec for spec in inputs.values() if isinstance(spec, dict)] if isinstance(inputs, dict) else []
        )
        tensors = [spec for spec in specs if isinstance(spec.get("shape"), list)] or specs  # (not eps)
        found = list(dict.fromkeys(d for spec in tensors if isinstance(d := spec.get("dtype"), str) and d))
        floating = [d for d in found if not d.startswith(("int", "uint", "bool"))]
        return "/".join(floating or found) or None
    return None


def _config_stop_conditions(root: Path) -> list[TargetSource]:
    """Stop-like settings a `config.json` states (iterations limits and the like)."""
    try:
        data = load_json(workspace_files.read_text(root / "config.json"))
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
            try:
                digest = hashlib.sha256(workspace_files.read_bytes(path)).hexdigest()
            except OSError as exc:  # (too large, or swapped for a pipe: its refusal is hashed)
                digest = f"unread: {exc.strerror}"
            hasher.update(name.encode() + b"\0" + digest.encode())
            sources.append(name)
    if not sources:
        hasher.update(NO_TARGETS.encode())
    return hasher.hexdigest(), sources


def profile(root: Path, readme: ReadmeInfo | None) -> WorkspaceProfile:
    spec = kinds.detect(folder_of(root, readme))
    kind = spec.name
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
    if goal is None:
        goal = spec.goal
    workloads, private = _workload_count(root, kind, readme)
    return WorkspaceProfile(
        kind=kind,
        harness=spec.harness,
        target_platform=readme.target.platform if readme else None,
        framework=readme.target.framework if readme else None,
        dtype=(readme.target.dtype if readme else None) or _problem_dtype(root, kind),
        goal=goal,
        workload_count=workloads,
        workload_count_note=private,
        stop_conditions=conditions,
        targets_digest=digest,
        digest_sources=sources,
        supervisor=atrex.supervisor(root),
    )
