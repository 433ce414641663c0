"""A SOL-ExecBench workspace's `solution.json`: the one reader of it, torch-free, so that the
daemon (kinds, static rules in the editor) and the benchmark child (the adapter) read the same
answer.

The schema is upstream's `BuildSpec` (NVIDIA/SOL-ExecBench `core/data/solution.py` @5b0f590):
`spec.languages` (required there) names what the solution is written in, from `pytorch`,
`triton`, `tlx`, `cute_dsl`, `cutile`, `cudnn_frontend` (Python) or `cutlass`, `cudnn`,
`cublas`, `cuda_cpp` (compiled); `spec.entry_point` is `file::function`;
`spec.destination_passing_style` defaults to true. upstream's evaluator
(`driver/templates/eval_driver.py` @2f55c0f) imports any Python solution and requires no
language in particular: a `pytorch` solution is a valid submission. atrex's
`reference/sol_seed.py` (`_solution_json`, 16f7ec4) writes V0 as exactly that
(`"languages": ["pytorch"]`) and tells the agent to update `spec.languages` when it migrates
`run()` to the target framework (`_readme`; `reference/CLAUDE.md`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kernelscope.protocol import workspace_files

SOLUTION = "solution.json"
# Languages whose kernels are Triton's (TLX is Triton's low-level extensions): launches the
# harness counts, and the static rules' "a Triton kernel" applies.
TRITON_LANGUAGES = frozenset({"triton", "tlx"})
TRITON_KERNEL = re.compile(r"^[ \t]*@[ \t]*triton\.(?:jit|autotune|heuristics)\b", re.M)


class SolutionError(ValueError):
    """solution.json exists but cannot be read as a JSON object."""


def read_spec(workspace: Path) -> dict[str, Any]:
    """solution.json's `spec` object; {} when the file is absent or has none."""
    path = workspace / SOLUTION
    if not path.is_file():
        return {}
    try:
        data = json.loads(workspace_files.read_text(path))
    except OSError as exc:
        raise SolutionError(f"cannot read solution {path}: {exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SolutionError(f"solution {path} is not valid JSON: {exc}") from exc
    spec = data.get("spec") if isinstance(data, dict) else None
    return spec if isinstance(spec, dict) else {}


def languages(workspace: Path) -> list[str]:
    """`spec.languages` as written, lower-cased ([] when absent or unreadable)."""
    try:
        found = read_spec(workspace).get("languages")
    except SolutionError:
        return []
    return [str(lang).lower() for lang in found] if isinstance(found, list) else []


def framework_solution(workspace: Path) -> str | None:
    """Why the workspace's solution is declared in a framework other than Triton (so "a
    Triton kernel" is not asked of it), or None: it declares Triton, or declares nothing
    (kernelscope's default, a Triton kernel, stands)."""
    declared = languages(workspace)
    if not declared or TRITON_LANGUAGES & set(declared):
        return None
    return f"solution.json declares languages {', '.join(declared)} (no Triton)"


def undeclared_triton(
    declared: str | None, kernel_text: str, readme_framework: str | None
) -> tuple[int | None, str] | None:
    """A warning where the solution declares no Triton (`declared`: `framework_solution`'s
    reason) while kernel.py defines Triton kernels or the README's target framework is
    Triton: the exemption stands (atrex's V0 is PyTorch until `run()` is migrated), but a
    kernel.py with a Triton path it need not take (a PyTorch fallback) passes under it.
    (the line of kernel.py's first Triton kernel, or None; the message), or None."""
    if declared is None:
        return None
    kernel = TRITON_KERNEL.search(kernel_text)
    reasons = ["kernel.py defines Triton kernels"] if kernel else []
    if readme_framework is not None and "triton" in readme_framework.lower():
        reasons.append("the README's target framework is Triton")
    if not reasons:
        return None
    line = kernel_text.count("\n", 0, kernel.start()) + 1 if kernel else None
    return line, (
        f"{declared}, yet {' and '.join(reasons)}: no Triton launch is required and a PyTorch "
        'path passes; once run() is Triton, add "triton" to spec.languages in solution.json'
    )
