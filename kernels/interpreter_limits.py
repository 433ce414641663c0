"""What the Triton CPU interpreter cannot do, found before running so the message is clear.

The interpreter (TRITON_INTERPRET=1) computes bfloat16 and fp8 arithmetic wrongly and
cannot autotune over several configs (that needs a GPU driver). A workspace that needs
either is reported as `unsupported` under the interpreter instead of failing obscurely.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

UNSUPPORTED_DTYPES = ("bfloat16", "bf16", "float8", "fp8", "e4m3", "e5m2")


def autotune_config_counts(path: Path) -> dict[str, int]:
    """kernel name -> number of configs in its @triton.autotune(configs=[...]) (literal lists)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return {}
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            if not (isinstance(decorator, ast.Call) and _name(decorator.func).endswith("autotune")):
                continue
            configs = next((k.value for k in decorator.keywords if k.arg == "configs"), None)
            if configs is None and decorator.args:
                configs = decorator.args[0]
            if isinstance(configs, (ast.List, ast.Tuple)):
                counts[node.name] = len(configs.elts)
    return counts


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return ""


def config_problems(configs: list[dict[str, Any]]) -> list[str]:
    problems = []
    for config in configs:
        for key, value in config.items():
            if isinstance(value, str) and any(d in value.lower() for d in UNSUPPORTED_DTYPES):
                problems.append(
                    f"configuration {config.get('name')} uses {key}={value}: the Triton interpreter "
                    "computes bfloat16/fp8 arithmetic wrongly; run it on a GPU (or add fp32/fp16 "
                    "CPU_CONFIGS for CPU correctness checks)"
                )
    return problems


def kernel_problems(paths: list[Path]) -> list[str]:
    problems = []
    for path in paths:
        for kernel, count in autotune_config_counts(path).items():
            if count > 1:
                problems.append(
                    f"{path.name}: {kernel} autotunes over {count} configs; the Triton interpreter "
                    "cannot autotune (it needs a GPU driver): run on a GPU, or keep one config for "
                    "CPU checks"
                )
    return problems
