"""Whether a Triton kernel is asked of a workspace (protocol/sol_solution.py, through the kinds
rule): SOL-ExecBench's solution.json names the solution's languages (upstream's BuildSpec), and
a solution declared in PyTorch (atrex's V0) is not held to KernelBench's Triton backend rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope.protocol.kinds import Folder, framework_solution
from kernelscope.protocol.static_rules import check_source

V0 = "import torch\n\n\ndef run(x, out):\n    out.copy_(torch.relu(x))\n"


def sol_folder(tmp_path: Path, solution: object | None) -> Folder:
    (tmp_path / "definition.json").write_text("{}")
    (tmp_path / "workload.jsonl").write_text("{}\n")
    if solution is not None:
        text = solution if isinstance(solution, str) else json.dumps(solution)
        (tmp_path / "solution.json").write_text(text)
    return Folder(tmp_path)


@pytest.mark.parametrize(
    ("solution", "declared"),
    [
        ({"spec": {"languages": ["pytorch"]}}, "solution.json declares languages pytorch (no Triton)"),
        (
            {"spec": {"languages": ["cute_dsl", "pytorch"]}},
            "solution.json declares languages cute_dsl, pytorch",
        ),
        ({"spec": {"languages": ["triton"]}}, None),
        ({"spec": {"languages": ["pytorch", "triton"]}}, None),
        ({"spec": {"languages": ["tlx"]}}, None),  # Triton's low-level extensions: Triton launches
        ({"spec": {}}, None),  # nothing declared: kernelscope's default, a Triton kernel
        (None, None),
        ("{not json", None),
    ],
)
def test_sol_languages_decide(tmp_path: Path, solution: object | None, declared: str | None) -> None:
    found = framework_solution(sol_folder(tmp_path, solution))
    assert found == declared or (declared is not None and found is not None and found.startswith(declared))


def test_only_sol_workspaces_declare(tmp_path: Path) -> None:
    """solution.json outside a SOL-ExecBench workspace is not read: other kinds ask for Triton."""
    (tmp_path / "solution.json").write_text(json.dumps({"spec": {"languages": ["pytorch"]}}))
    (tmp_path / "reference.py").write_text("CONFIGS = []\ndef make_inputs(): ...\ndef reference(): ...\n")
    assert framework_solution(Folder(tmp_path, tmp_path / "reference.py")) is None


def test_a_declared_framework_turns_off_the_pytorch_rules() -> None:
    rules = {f.rule for f in check_source(V0, kind="sol-execbench")}
    assert "triton-impl" in rules
    assert not {f.rule for f in check_source(V0, kind="sol-execbench", framework=True)} & {
        "triton-impl",
        "torch-op-in-timed-path",
        "torch-computation-ops",
    }


def test_the_editor_reads_the_declaration_on_every_check(tmp_path: Path) -> None:
    """The daemon's static check on a save (lsp/features/save.py) asks the workspace cache,
    which reads solution.json each time: declaring Triton turns triton-impl on at once."""
    from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
    from kernelscope.daemon.lsp.features.save import static_check

    sol_folder(tmp_path, {"spec": {"languages": ["pytorch"]}})
    cache = WorkspaceCache(tmp_path)
    assert not [n for n in static_check(cache, V0) if n.code == "static:triton-impl"]
    (tmp_path / "solution.json").write_text(json.dumps({"spec": {"languages": ["triton"]}}))
    assert [n for n in static_check(cache, V0) if n.code == "static:triton-impl"]


UNUSED_TRITON = (
    "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\ndef _k(x):\n"
    "    tl.store(x, tl.load(x))\n\n\ndef run(x, out):\n    out.copy_(torch.relu(x))\n"
)


@pytest.mark.parametrize(
    ("languages", "text", "readme", "warned"),
    [
        (["pytorch"], UNUSED_TRITON, None, True),  # Triton kernels defined, none declared
        (["pytorch"], V0, "- Target framework: `triton` (V0 starts as PyTorch)\n", True),
        (["pytorch"], V0, None, False),  # a V0 in PyTorch, nothing says Triton
        (["pytorch", "triton"], UNUSED_TRITON, None, False),  # declared: the Triton rules apply
    ],
)
def test_a_triton_workspace_declaring_no_triton_is_warned(
    tmp_path: Path, languages: list[str], text: str, readme: str | None, warned: bool
) -> None:
    """languages without Triton still turn the Triton rules off, with a warning on the save
    (the kernel's line) where kernel.py defines Triton kernels or the README targets Triton."""
    from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
    from kernelscope.daemon.lsp.features.save import static_check

    sol_folder(tmp_path, {"spec": {"languages": languages}})
    if readme is not None:
        (tmp_path / "README.md").write_text(f"# moe\n\n## Config\n\n{readme}")
    found = [n for n in static_check(WorkspaceCache(tmp_path), text) if n.code == "undeclared-triton"]
    assert bool(found) is warned, found
    if warned:
        assert "spec.languages" in found[0].message and found[0].severity == "warning"
        assert found[0].line == (6 if text == UNUSED_TRITON else None)
