"""Where an input the reference changes in place is part of the result, and where it is not
(kernels/input_changes.py): only where the kind's evaluator means it (SOL-ExecBench's
destination passing: tests/kernels/test_sol_in_place.py) or where the reference returns the
input it changed. Elsewhere, a KernelBench or native reference's incidental in-place op is
its own business: the candidate gets a fresh draw and must leave its inputs alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kernels.test_sol_execbench import assert_verdict

README = '# add\n\n```kernelscope\n{"bench": {"reference": "model_ex_add.py"}}\n```\n'

RELU_REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        a.relu_()  # incidental in-place op on an input
        return a + b


def get_inputs():
    return [torch.randn(1, 128), torch.randn(1, 128)]


def get_init_inputs():
    return []
"""

_KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        {BODY}
        out = torch.empty_like(a)
        _relu_add[(triton.cdiv(a.numel(), 128),)](a, b, out, a.numel(), BLOCK=128)
        return out
"""
OUT_OF_PLACE = _KERNEL.replace("{BODY}", "pass")
ALSO_IN_PLACE = _KERNEL.replace("{BODY}", "a.relu_()")  # does what the reference does to a


def kernelbench_workspace(path: Path, reference: str, kernel: str) -> Path:
    path.mkdir(parents=True)
    (path / "README.md").write_text(README)
    (path / "model_ex_add.py").write_text(reference)
    (path / "kernel.py").write_text(kernel)
    return path


@pytest.mark.parametrize(("kernel", "kind"), [(OUT_OF_PLACE, None), (ALSO_IN_PLACE, "cheat")])
def test_kernelbench_incidental_in_place_op_is_not_part_of_the_result(
    tmp_path: Path, kernel: str, kind: str | None
) -> None:
    """Upstream KernelBench compares outputs only: an honest out-of-place kernel passes; a
    change to an input stays the old rule's cheat."""
    ws = kernelbench_workspace(tmp_path / "kb", RELU_REFERENCE, kernel)
    assert_verdict(ws, kind, "modified its inputs in place: input 0")


LIST_REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, caches):
        caches[0].copy_(a)  # writes a cache slot (a list of tensors), returns a + 1
        return a + 1.0


def get_inputs():
    return [torch.randn(1, 128), [torch.zeros(1, 128), torch.zeros(1, 128)]]


def get_init_inputs():
    return []
"""

ADD_ONE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, caches):
        {BODY}
        out = torch.empty_like(a)
        _add_one[(triton.cdiv(a.numel(), 128),)](a, out, a.numel(), BLOCK=128)
        return out
"""


@pytest.mark.parametrize(
    ("body", "kind"), [("pass", None), ("caches[1].fill_(1.0)", "cheat")], ids=["leaves", "writes"]
)
def test_a_list_input_the_reference_changes_is_redrawn(tmp_path: Path, body: str, kind: str | None) -> None:
    """A list holding tensors that the reference writes into: the candidate gets a fresh draw
    (no false cheat) and must leave the list alone (a list is never part of the result)."""
    ws = kernelbench_workspace(tmp_path / "kb", LIST_REFERENCE, ADD_ONE.replace("{BODY}", body))
    assert_verdict(ws, kind, "input 1")


def test_timed_calls_are_checked_when_the_reference_writes_into_a_list_input(tmp_path: Path) -> None:
    """The verified timed calls run the reference on a copy of the list it writes into: a
    candidate replaying its first answer for the same input object is caught."""
    replay = ADD_ONE.replace(
        "        {BODY}\n        out = torch.empty_like(a)\n",
        "        if getattr(self, 'seen', None) is a:\n            _add_one[(1,)](a, self.out, 1, BLOCK=128)\n"
        "            return self.out\n        self.seen = a\n        out = self.out = torch.empty_like(a)\n",
    )
    ws = kernelbench_workspace(tmp_path / "kb", LIST_REFERENCE, replay)
    assert_verdict(ws, "cheat", "timed call")
