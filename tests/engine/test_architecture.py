"""The layout's rules, checked on the source (issue #24): the three packages depend downwards
only (editor clients -> daemon -> protocol; the daemon reaches kernels/ only by starting a child
process), no import cycle between modules, the engine's parts visible at its top level, and no
source module too long to read. Imports are read by AST, lazy ones inside functions included;
imports under `if TYPE_CHECKING:` are for the type checker only and are left out."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGES = {
    "daemon": "kernelscope.daemon",
    "protocol": "kernelscope.protocol",
    "kernels": "kernelscope.kernels",
}
MAX_LINES = 800


def _modules() -> dict[str, Path]:
    tracked = subprocess.run(
        ["git", "ls-files", "daemon", "protocol", "kernels"], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout.split()
    found = {}
    for name in tracked:
        path = Path(name)
        if path.suffix != ".py" or not (REPO_ROOT / path).is_file():
            continue
        parts = list(path.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([PACKAGES[parts[0]], *parts[1:]])] = REPO_ROOT / path
    return found


def _type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The kernelscope modules `module` imports (a `from package import name` counts as the
    submodule when `name` is one)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking_block(node):
            for child in node.orelse:  # type: ignore[attr-defined]
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in known else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return {name for name in found if name in known and name != module}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def test_the_packages_depend_downwards_only() -> None:
    wrong = []
    for module, imports in _graph().items():
        for target in imports:
            if module.startswith("kernelscope.protocol") and not target.startswith("kernelscope.protocol"):
                wrong.append((module, target))
            if module.startswith("kernelscope.kernels") and target.startswith("kernelscope.daemon"):
                wrong.append((module, target))
            if module.startswith("kernelscope.daemon") and target.startswith("kernelscope.kernels"):
                wrong.append((module, target))  # the daemon starts `python -m kernelscope.kernels...`
            if module.startswith("kernelscope.daemon.engine") and (
                target.startswith(("kernelscope.daemon.lsp", "kernelscope.daemon.cli"))
            ):
                wrong.append((module, target))
    assert not wrong, wrong


def test_no_import_cycle() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            connect(node)
    assert not cycles, cycles


def test_no_source_module_is_too_long_to_read() -> None:
    long = {
        str(p.relative_to(REPO_ROOT)): n
        for p in _modules().values()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, long


def test_the_engine_shows_its_parts() -> None:
    """At most 8 entries at the engine's top level, each folder saying what it owns."""
    tracked = subprocess.run(
        ["git", "ls-files", "daemon/engine"], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout.split()
    top = {Path(name).parts[2] for name in tracked}
    assert len(top) <= 8, sorted(top)
    for entry in top:
        init = REPO_ROOT / "daemon" / "engine" / entry / "__init__.py"
        if (REPO_ROOT / "daemon" / "engine" / entry).is_dir():
            assert init.is_file() and ast.get_docstring(ast.parse(init.read_text())), (
                f"{entry}/ has no docstring"
            )


def test_kernelscope_s_own_checkout_is_not_a_workspace(tmp_path: Path) -> None:
    """The one discovery rule (protocol/vocabulary.WORKSPACE_RULE): this repository holds no
    kernel.py at its top; nor is a folder whose README carries a ```kernelscope block (as a
    project documenting the format might) without one."""
    from kernelscope.daemon.engine.workspace.discovery import is_optimization_workspace

    assert not is_optimization_workspace(REPO_ROOT)
    documented = tmp_path / "documented"
    documented.mkdir()
    (documented / "README.md").write_text('# docs\n\n```kernelscope\n{"target": {}}\n```\n')
    assert not is_optimization_workspace(documented)
    assert is_optimization_workspace(REPO_ROOT / "examples" / "vector_add")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "kernel.py").write_text("")
    assert not is_optimization_workspace(fresh)
    (fresh / "README.md").write_text("# op\n\n~~~kernelscope\n{}\n~~~\n")
    assert is_optimization_workspace(fresh)  # before its first memory record
