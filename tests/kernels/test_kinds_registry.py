"""A new workspace kind is one module (tests/support/toy_kind.py): once it is imported, the one
kinds rule names it for the daemon (workspace profile) and for the benchmark child, which loads
its adapter and measures the kernel with it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelscope.protocol import kinds
from tests.conftest import REPO_ROOT

TOY_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


def kernel_fn(x):
    out = torch.empty_like(x)
    double_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out
"""


@pytest.fixture
def toy_kind() -> Iterator[kinds.KindSpec]:
    from tests.support import toy_kind

    kinds.register(toy_kind.TOY)  # (again: an earlier test may have unregistered it)
    yield toy_kind.TOY
    kinds.unregister("toy")


@pytest.fixture
def toy_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "kernel_opt_toy"
    ws.mkdir()
    (ws / "toy_problem.json").write_text('{"sizes": [1000, 4096]}')
    (ws / "reference.py").write_text("def double(x):\n    return x * 2\n")
    (ws / "kernel.py").write_text(TOY_KERNEL)
    return ws


def test_the_daemon_names_a_kind_registered_by_one_module(toy_kind: kinds.KindSpec, toy_ws: Path) -> None:
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    profile = Workspace(toy_ws).profile()
    assert profile.kind == "toy"
    assert profile.harness == toy_kind.harness and profile.goal == "double a vector fast"
    kinds.unregister("toy")
    assert Workspace(toy_ws).profile().kind == "native"  # nothing else knows it


def test_the_benchmark_child_reads_it_with_its_adapter(toy_kind: kinds.KindSpec, toy_ws: Path) -> None:
    from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark

    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    result = run_benchmark(BenchRequest(workspace=toy_ws, mode="interpreter", seeds=1, env=env))
    assert result.error is None, result.error
    assert result.passed and [c.name for c in result.configs] == ["n=1000", "n=4096"]


def test_the_rule_picks_the_first_matching_kind_and_the_adapter_of_the_contract(tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    folder.mkdir()
    # a native Atrex-Bench operator as upstream lays it out: shapes.json an object keyed by
    # shape id, get_inputs in input.py, reference.py only `class Model`
    (folder / "shapes.json").write_text('{"0": {"init_kwargs": {}, "input_kwargs": {"n": 8}}}')
    (folder / "input.py").write_text("def _make_inputs(n): ...\ndef get_inputs(): ...\n")
    (folder / "reference.py").write_text("class Model: ...\n")
    found = kinds.Folder(folder)
    spec = kinds.detect(found)
    assert spec.name == "atrex-bench"  # measured by its own evaluator alone: no adapter reads it
    assert spec.adapter is None and spec.own_gate is not None
    assert spec.own_gate.command == "python test_kernel.py --no-memory"
    assert spec.own_gate.unavailable(found) is None
    (folder / "shapes.json").unlink()
    (folder / "agent_problem.json").write_text("{}")  # generalized: the exact shapes are private
    assert kinds.detect(kinds.Folder(folder)) is spec and spec.own_gate.unavailable(kinds.Folder(folder))
    other = tmp_path / "native"
    other.mkdir()
    (other / "reference.py").write_text("CONFIGS = []\ndef make_inputs(): ...\ndef reference(): ...\n")
    assert kinds.adapter_for(kinds.Folder(other)) == kinds.NATIVE.adapter
    with pytest.raises(KeyError, match="unknown workspace kind 'nope'"):
        kinds.spec_of("nope")
