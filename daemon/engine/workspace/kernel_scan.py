"""Finds the Triton kernels in kernel.py by parsing it, never importing it.

Importing kernel.py would run user code (and pull in torch/triton) inside the daemon. The
`ast` module is enough: a kernel is a function decorated with `triton.jit`,
`triton.autotune` or `triton.heuristics`, under whatever alias the file imported triton
(`import triton as tr`, `from triton import jit as J`, `triton.runtime.jit`...).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from kernelscope.protocol import workspace_files
from kernelscope.protocol.text_positions import python_text, source_lines
from kernelscope.protocol.workspace import KernelInfo, KernelScan, SourceError

KERNEL_DECORATORS = frozenset({"jit", "autotune", "heuristics"})
# The largest kernel.py the editor-facing reads parse (lenses, hover, hints, the save's checks):
# `ast.parse` holds the GIL for its whole run, about a second per MB, so a 10 MB file an agent
# wrote froze every request for seconds at each save. `kernelscope check` and the harness's
# static gate (kernels/, in a child process) read any size.
EDITOR_MAX_CHARS = 2_000_000


def too_large(source: str) -> str | None:
    """Why the editor's reads skip `source` (None: they read it)."""
    if len(source) <= EDITOR_MAX_CHARS:
        return None
    return (
        f"kernel.py is {len(source) / 1e6:.1f} million characters: kernelscope's editor checks read "
        f"up to {EDITOR_MAX_CHARS / 1e6:.0f} million (parsing more stalls the editor); "
        "`kernelscope check` and `kernelscope bench` read it whole"
    )


def scan_kernel_file(path: Path) -> KernelScan:
    """Scan a kernel file; a missing or unparsable file yields `error`, never an exception."""
    try:
        source = workspace_files.read_text(path, errors="replace")
    except OSError as exc:
        return KernelScan(
            path=str(path),
            error=SourceError(path=str(path), message=f"cannot read: {exc.strerror or exc}"),
        )
    return scan_kernel_source(source, str(path))


def scan_kernel_source(source: str, path: str = "kernel.py", whole: bool = False) -> KernelScan:
    """Scan kernel source text. The daemon asks on every hover and inlay request: the scan of
    a text is remembered (a few texts: the file and the buffers being edited), and each caller
    gets its own list (the kernel entries are shared: read them, do not change them). A text
    over EDITOR_MAX_CHARS is an error unless `whole` (the CLI's check asks for it)."""
    reason = None if whole else too_large(source)
    if reason is not None:
        return KernelScan(path=path, error=SourceError(path=path, message=reason))
    scan = _scan_cached(source)
    error = scan.error.model_copy(update={"path": path}) if scan.error is not None else None
    return scan.model_copy(update={"path": path, "kernels": list(scan.kernels), "error": error})


# Keyed on the text alone: the lens's scan of the saved file (by its path), the diagnostics'
# and hover's of the same text (a buffer, by no path) share one parse (a 1,000-line kernel.py
# takes ~30 ms on the event loop).
@lru_cache(maxsize=16)
def _scan_cached(source: str, path: str = "kernel.py") -> KernelScan:
    source = python_text(source)
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return KernelScan(
            path=path,
            error=SourceError(
                path=path,
                message=f"{exc.msg} (line {exc.lineno})" if exc.lineno else exc.msg,  # (NUL: no line)
                line=exc.lineno,
                column=(exc.offset - 1) if exc.offset else None,
            ),
        )
    except ValueError as exc:  # e.g. source contains NUL bytes
        return KernelScan(path=path, error=SourceError(path=path, message=str(exc)))
    statements = list(_statements(tree))
    aliases = _triton_aliases(statements)
    lines = source_lines(source)
    kernels: list[KernelInfo] = []
    for node in statements:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = [_resolve(_dotted(d), aliases) for d in node.decorator_list]
        triton_names = [n for n in names if n and _is_kernel_decorator(n)]
        if not triton_names:
            continue
        kernels.append(
            KernelInfo(
                name=node.name,
                decorators=triton_names,
                decorator_line=min(d.lineno for d in node.decorator_list),
                def_line=node.lineno,
                name_column=_name_column(lines, node),
                end_line=node.end_lineno or node.lineno,
                autotuned=any(n.endswith(".autotune") for n in triton_names),
            )
        )
    kernels.sort(key=lambda k: k.def_line)
    return KernelScan(path=path, kernels=kernels)


def _statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every statement of the module, nested ones included (function and class bodies, the
    branches of if/try/with/for/match), breadth first as `ast.walk` goes. A `def` and an import
    are statements, never parts of an expression: not descending into expressions finds the
    same ones in a fifth of the time (`ast.walk` over every node of a 1,000-line kernel.py took
    ~15 ms of the scan, on the event loop at each save)."""
    queue: deque[ast.AST] = deque(tree.body)
    while queue:
        node = queue.popleft()
        if isinstance(node, ast.stmt):
            yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                queue.append(child)


def _triton_aliases(statements: list[ast.stmt]) -> dict[str, str]:
    """Local name -> fully qualified triton name, from the file's imports."""
    aliases: dict[str, str] = {}
    for node in statements:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "triton" or alias.name.startswith("triton."):
                    local = alias.asname or alias.name.split(".")[0]
                    aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and (node.module == "triton" or node.module.startswith("triton."))
        ):
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _resolve(name: str | None, aliases: dict[str, str]) -> str | None:
    if name is None:
        return None
    head, _, rest = name.partition(".")
    if head in aliases:
        return aliases[head] + ("." + rest if rest else "")
    return name


def _is_kernel_decorator(qualified: str) -> bool:
    parts = qualified.split(".")
    return parts[0] == "triton" and parts[-1] in KERNEL_DECORATORS


def _name_column(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    line = lines[node.lineno - 1] if 0 < node.lineno <= len(lines) else ""
    marker = line.find("def " + node.name)
    return marker + 4 if marker >= 0 else node.col_offset
