#!/usr/bin/env python3
"""Prints the source layout as Markdown, drawn from the tree as it is: every package folder of
daemon/, protocol/ and kernels/ with the first sentence of its docstring, and each module with
the first line of its own. The docs site's "Layout" page is this output (docs/hooks.py), so it
cannot go stale.

    python scripts/layout.py
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = ("protocol", "kernels", "daemon")


def _docstring(path: Path) -> str:
    try:
        return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except (OSError, SyntaxError):
        return ""


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    match = re.match(r"(.+?[.:;])(\s|$)", flat)
    return (match.group(1) if match else flat).rstrip(":;")


def _package(folder: Path, depth: int, lines: list[str]) -> None:
    relative = folder.relative_to(ROOT)
    summary = _first_sentence(_docstring(folder / "__init__.py"))
    lines.append(f"{'  ' * depth}- **`{relative}/`**" + (f": {summary}" if summary else ""))
    for module in sorted(folder.glob("*.py")):
        if module.name in ("__init__.py", "__main__.py"):
            continue
        first = _docstring(module).strip().splitlines()
        summary = f": {_first_sentence(first[0])}" if first else ""
        lines.append(f"{'  ' * (depth + 1)}- `{module.name}`{summary}")
    for child in sorted(p for p in folder.iterdir() if (p / "__init__.py").is_file()):
        _package(child, depth + 1, lines)


def layout() -> str:
    lines: list[str] = []
    for top in TOP:
        _package(ROOT / top, 0, lines)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(layout())
