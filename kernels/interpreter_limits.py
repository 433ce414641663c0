"""What the Triton CPU interpreter cannot do, so that its faults are never a kernel's verdict.

The interpreter (TRITON_INTERPRET=1, Triton 3.9) cannot autotune over several configs (that
needs a GPU driver) and has no fp8: a workspace that needs either is `unsupported` under it,
found before running. bfloat16 is partly right: loading bf16, computing in fp32 and storing
works, but it truncates fp32 -> bf16 casts instead of rounding to nearest even, bf16
arithmetic gives wrong values (NaN among them), and `tl.sum` over bf16 is wrong. So bf16
workloads run; when one fails, `bf16_faults` looks in the kernel source for what those
faults could explain. Arithmetic or a reduction on a value loaded without a cast to fp32
makes the failure `interpreter_limit`, naming the operation and its line, never a wrong
answer. A cast to bf16 costs at most one bf16 step (2^-7 relative) more than on a GPU: the
failure stays the kernel's, with that said.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from kernelscope.protocol.text_positions import python_text

UNSUPPORTED_DTYPES = ("float8", "fp8", "e4m3", "e5m2")
BF16_NAMES = ("bfloat16", "bf16")
_REDUCTIONS = {"sum", "max", "min", "reduce", "cumsum", "dot", "argmax", "argmin", "xor_sum", "prod"}


def autotune_config_counts(path: Path) -> dict[str, int]:
    """kernel name -> number of configs in its @triton.autotune(configs=[...]) (literal lists)."""
    try:
        tree = ast.parse(python_text(path.read_text(encoding="utf-8", errors="replace")))
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
                    "has no fp8; run it on a GPU (or add fp32/fp16 CPU_CONFIGS for CPU correctness checks)"
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


def uses_bf16(config: dict[str, Any]) -> bool:
    """A configuration with bfloat16 tensors (a dtype, dtypes or precision value naming it)."""
    for value in config.values():
        texts = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(t, str) and any(b in t.lower() for b in BF16_NAMES) for t in texts):
            return True
    return False


def _jit_functions(tree: ast.AST) -> list[ast.FunctionDef]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and any(_name(d).endswith("jit") for d in _decorators(node))
    ]


def _decorators(node: ast.FunctionDef) -> list[ast.expr]:
    return [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]


def _is_load(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _name(node.func).endswith("load")


def _cast_target(node: ast.expr) -> str | None:
    """`x.to(T)`: T's source text."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
        target = (
            node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "dtype"), None)
        )
        return ast.unparse(target) if target is not None else None
    return None


def bf16_faults(path: Path) -> tuple[list[str], list[str]]:
    """Operations in the @triton.jit functions of `path` that the interpreter's bfloat16
    faults could break, each with its line: arithmetic or reductions on a value loaded
    without a cast to fp32 (followed through assignments), and, apart, casts that are not to
    fp32 (to bf16, to an output's or input's element type)."""
    try:
        tree = ast.parse(python_text(path.read_text(encoding="utf-8", errors="replace")))
    except (OSError, SyntaxError, ValueError):
        return [], []
    arithmetic: list[tuple[int, str]] = []
    casts: list[tuple[int, str]] = []
    for function in _jit_functions(tree):
        raw = _raw_values(function)
        for node in ast.walk(function):
            target = _cast_target(node) if isinstance(node, ast.expr) else None
            if (
                isinstance(node, ast.expr)
                and target is not None
                and "float32" not in target
                and "fp32" not in target
            ):
                casts.append(
                    (
                        node.lineno,
                        f"line {node.lineno}: casts to {target} (the interpreter truncates fp32 -> "
                        "bfloat16 instead of rounding to nearest even)",
                    )
                )
            elif isinstance(node, ast.BinOp) and (_is_raw(node.left, raw) or _is_raw(node.right, raw)):
                arithmetic.append(
                    (
                        node.lineno,
                        f"line {node.lineno}: computes `{ast.unparse(node)}` on a value loaded without a "
                        "cast to fp32 (the interpreter's bfloat16 arithmetic is wrong)",
                    )
                )
            elif (
                isinstance(node, ast.Call)
                and _name(node.func).rsplit(".", 1)[-1] in _REDUCTIONS
                and any(_is_raw(a, raw) for a in node.args)
            ):
                arithmetic.append(
                    (
                        node.lineno,
                        f"line {node.lineno}: reduces a value loaded without a cast to fp32 with "
                        f"{_name(node.func)} (the interpreter's bfloat16 reductions are wrong)",
                    )
                )
    # apart: a cast costs at most one bf16 step (2^-7 relative), wrong arithmetic anything
    return [text for _, text in sorted(set(arithmetic))], [text for _, text in sorted(set(casts))]


def _is_raw(node: ast.expr, raw: set[str]) -> bool:
    """A value that may still be bf16: a name holding one, a load, arithmetic on one."""
    if isinstance(node, ast.Name):
        return node.id in raw
    if _is_load(node):
        return True
    if isinstance(node, ast.BinOp):
        return _is_raw(node.left, raw) or _is_raw(node.right, raw)
    if isinstance(node, ast.UnaryOp):
        return _is_raw(node.operand, raw)
    return False


def _raw_values(function: ast.FunctionDef) -> set[str]:
    """Names that hold a loaded value not yet cast to fp32, followed through assignments
    (`x = tl.load(...)`, `y = x`, `z = y * w`) in source order until nothing changes."""
    raw: set[str] = set()
    assigns = [n for n in ast.walk(function) if isinstance(n, ast.Assign)]
    changed = True
    while changed:
        changed = False
        for node in assigns:
            value = node.value
            cast = _cast_target(value)
            holds = cast is None and _is_raw(value, raw)
            for target in node.targets:
                if isinstance(target, ast.Name) and holds and target.id not in raw:
                    raw.add(target.id)
                    changed = True
    return raw
