"""The profile of a native Atrex-Bench workspace (atrex-kernel-agent v0.3): its workloads are the
entries of `shapes.json` (private in a generalized workspace, and said so), and the targets
digest covers every operator file atrex keeps immutable after V0."""

from __future__ import annotations

from pathlib import Path

from kernelscope.daemon.engine.run.gate_output import Workloads
from kernelscope.daemon.engine.workspace.workspace import Workspace
from tests.support.atrex_bench_workspace import SHAPES, make_atrex_bench_workspace
from tests.support.sol_workspace import make_sol_workspace


def test_workloads_are_the_shapes_and_the_digest_covers_the_operator_files(tmp_path: Path) -> None:
    ws = make_atrex_bench_workspace(tmp_path)
    profile = Workspace(ws).profile()
    assert profile.kind == "atrex-bench" and "test_kernel.py --no-memory" in profile.harness
    assert profile.workload_count == len(SHAPES) and profile.workload_count_note is None
    # atrex's IMMUTABLE_BASELINE_PATHS among the operator files
    protected = {"shapes.json", "input.py", "metadata.json", "roofline.json", "valid.py"}
    assert protected <= set(profile.digest_sources)
    for name in sorted(protected - {"shapes.json"}):
        path = ws / name
        original = path.read_bytes()
        path.write_bytes(original + b"\n# edited\n")
        assert Workspace(ws).profile().targets_digest != profile.targets_digest, name
        path.write_bytes(original)
    assert Workspace(ws).profile().targets_digest == profile.targets_digest


def test_a_generalized_workspace_says_its_shapes_are_private(tmp_path: Path) -> None:
    ws = make_atrex_bench_workspace(tmp_path, generalized=True)
    profile = Workspace(ws).profile()
    assert profile.kind == "atrex-bench" and profile.workload_count is None
    assert profile.workload_count_note is not None and "private" in profile.workload_count_note
    assert {"agent_problem.json", "input.py"} <= set(profile.digest_sources)


def test_a_shapes_json_too_deep_to_read_is_no_workloads_as_for_the_gate(tmp_path: Path) -> None:
    """shapes.json is read once (workspace/kinds.py atrex_bench_shapes) for the profile's count
    and the gate's configuration names: nested deeper than the JSON reader recurses, the gate
    read no shapes while the profile's own reader raised RecursionError."""
    ws = make_atrex_bench_workspace(tmp_path)
    (ws / "shapes.json").write_text('{"0": ' + "[" * 100_000 + "]" * 100_000 + "}")
    profile = Workspace(ws).profile()
    assert Workloads.read(ws).axes == {}
    assert profile.workload_count is None and profile.workload_count_note is None


def test_the_dtype_is_read_where_upstream_states_it(tmp_path: Path) -> None:
    """Atrex-Bench's metadata.json `"dtype"` and SOL-ExecBench's definition.json input dtypes
    (the tensors', floating: no scalar eps, no int64 index); the README's own wins. Before:
    `kernelscope workspace` said dtype=- for both (only the README was read)."""
    ws = make_atrex_bench_workspace(tmp_path / "ab")
    assert Workspace(ws).profile().dtype == "fp32"  # METADATA's "dtype"
    sol = make_sol_workspace(tmp_path / "sol", dtype="bfloat16")
    assert Workspace(sol).profile().dtype == "bfloat16"
    readme = sol / "README.md"
    readme.write_text(readme.read_text().replace("## Config\n", "## Config\n- dtype: `fp8`\n", 1))
    assert "dtype: `fp8`" in readme.read_text()
    assert Workspace(sol).profile().dtype == "fp8"
